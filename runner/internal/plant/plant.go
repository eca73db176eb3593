// Package plant names the bugs that can be planted into the system under
// test, one per switch. They exist only as negative controls: tests and
// `run --plant <bug>` use them to prove that the scenarios and the verifier
// catch what they claim to catch. A planted run is labelled in the evidence.
package plant

import "github.com/orderflow-audit/orderflow-audit/spec"

// Bug is one planted bug; the empty Bug is a clean system.
type Bug string

// None is a clean system. The planted bugs' constants are generated from
// spec.Plants into bugs.go (go generate ./spec).
const None Bug = ""

// Parse returns the Bug named s ("" is None); spec.Plants lists the bugs.
func Parse(s string) (Bug, error) {
	b, err := spec.ParsePlant(s)
	return Bug(b), err
}
