// Package profiles holds the profiles the tool ships, embedded so that
// the verifier needs no file beside the binary: reference.yaml describes
// our own reference pipeline as a pipeline we did not write
// (docs/blackbox.md), and verify runs the witness-only layer under it
// beside the white-box verifier on every reference bundle.
package profiles

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

//go:embed reference.yaml
var reference []byte

// ReferencePath is where the reference profile lives in the repository,
// as verdicts and reports name it.
const ReferencePath = "profiles/reference.yaml"

// Reference returns the reference profile's text (a copy: callers may
// keep or change it).
func Reference() []byte { return append([]byte(nil), reference...) }

// ReferenceSHA256 is the sha256 (hex) of the reference profile's text.
func ReferenceSHA256() string {
	sum := sha256.Sum256(reference)
	return hex.EncodeToString(sum[:])
}
