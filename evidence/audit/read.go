// Package audit reads the bundle of a black-box audit (evidence.BlackBox,
// docs/blackbox.md) for the verifier, every byte of it through the bundle
// gate (evidence/bundle): the evidence file; the profile, from the bundle
// and nowhere else, once its size and sha256 match the evidence; the
// binlog cut to the run window; the broker's log; the load client's
// history; the roles' captured output (verified, never parsed).
//
// Read separates what cannot be checked at all from what is wrong with
// the bundle. The first is an error wrapping evidence.ErrBadInput (exit
// 2): the evidence file is not one, or the profile inside the bundle,
// though it is the file the evidence recorded, is not a valid profile.
// The second is a Problem, which the verifier turns into a FAIL: a file
// missing, changed after the run (its size or sha256 differs), outside
// its place, or unlisted beside the listed ones; a witness that cannot be
// read.
package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// Bundle is a black-box audit's bundle as the verifier read it. A nil
// Profile, Binlog or Broker means that part could not be had; Problems or
// Missing say why.
type Bundle struct {
	// Path is the evidence file's path as given.
	Path     string
	Evidence *evidence.BlackBox
	// Profile is the profile read from the bundle's file.
	Profile *profile.Profile
	// Binlog is the binlog witness, its files verified: Binlog.Scan reads
	// it cut to the run window (after its start position, up to its end
	// GTIDs). A binlog whose files passed the gate may still be damaged
	// inside: Scan says so.
	Binlog *Binlog
	// Broker is the broker's log (every topic; the rules take the
	// target's). Read from a data directory, it is broker.OpenDataFS's:
	// every record checked, but handed out by EachRecord, not kept in
	// its partitions' Records.
	Broker *broker.Log
	// BrokerStart is the window's first offset per partition.
	BrokerStart map[int32]int64
	// Client is the load client's history; nil when the bundle has none
	// or it could not be read.
	Client []evidence.ClientRequest
	// Holes are gaps between the window the evidence states and what the
	// binlog holds, each in a sentence (the holes rule reports them).
	Holes []string
	// Missing are the witnesses the evidence lists as missing.
	Missing []string
	// Problems are the bundle's faults, in the order found.
	Problems []Problem

	gate *bundle.Bundle
}

// Close closes the bundle's files (Binlog.Scan reads no more).
func (b *Bundle) Close() error { return b.gate.Close() }

// Problem is one fault of a bundle's files: each is a FAIL of the verdict.
type Problem struct {
	// Rule is the reason's id: witness-*, as for the reference's
	// witnesses, and profile-*, client-*, output-*, bundle-unlisted for
	// the other files (see refused).
	Rule string
	// Path is the file, relative to the evidence file's directory.
	Path    string
	Message string
	// Field, Claimed and Recomputed say what differs from the evidence
	// (size, sha256, a count), when something does.
	Field, Claimed, Recomputed string
}

// Read opens the bundle of the black-box evidence file at path through
// the gate and reads everything in it but the binlog, whose files it
// verifies and Binlog.Scan reads. The caller closes the Bundle once done
// with it (Close), the binlog's files open until then.
func Read(ctx context.Context, path string) (_ *Bundle, err error) {
	b, err := bundle.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", evidence.ErrBadInput, err)
	}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	bb, err := evidence.ParseBlackBox(b.Evidence())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := &reader{b: b, out: &Bundle{Path: path, Evidence: bb, BrokerStart: map[int32]int64{}, gate: b},
		base: evidence.BlackBoxDir(path)}
	for _, o := range bb.Window.Broker.StartOffsets {
		r.out.BrokerStart[o.Partition] = o.Offset
	}
	if err := r.profile(); err != nil {
		return nil, err
	}
	r.witnesses(ctx)
	r.client()
	r.outputs()
	r.unlisted()
	if err := ctx.Err(); err != nil {
		return nil, err // a witness read cut short is no fault of the bundle
	}
	return r.out, nil
}

type reader struct {
	b    *bundle.Bundle
	out  *Bundle
	base string // the directory beneath which every file lies
}

func (r *reader) problem(p Problem) { r.out.Problems = append(r.out.Problems, p) }

// place checks that f lies beneath dir (the bundle's directory, or a
// witness's); kind names the file for the rule (witness, profile, ...).
func (r *reader) place(kind string, f evidence.WitnessFile, dir string) bool {
	if f.Path == dir || strings.HasPrefix(f.Path, dir+"/") {
		return true
	}
	r.problem(Problem{Rule: kind + "-path", Path: f.Path,
		Message: fmt.Sprintf("the %s file %s is not under %s, where the bundle keeps it", kind, f.Path, dir)})
	return false
}

// verified reads f through the gate once its size and sha256 match; a
// refusal is a problem of kind's rules and nil.
func (r *reader) verified(kind, what string, f evidence.WitnessFile) *bundle.File {
	vf, err := r.b.Verified(f.Path, f.Size, f.SHA256)
	if err != nil {
		r.refused(kind, what, f, err)
		return nil
	}
	return vf
}

// refused words a file the gate refused as the reference's witness
// checks do (checks/witness.go), so that a tampered file of either kind
// of bundle fails the same way: <kind>-file-missing, <kind>-size,
// <kind>-digest, else <kind>-path.
func (r *reader) refused(kind, what string, f evidence.WitnessFile, err error) {
	var be *bundle.Error
	errors.As(err, &be)
	switch {
	case errors.Is(err, bundle.ErrMissing):
		r.problem(Problem{Rule: kind + "-file-missing", Path: f.Path,
			Message: fmt.Sprintf("the %s file %s does not exist: it was deleted or moved (%v)", what, f.Path, err)})
	case errors.Is(err, bundle.ErrSize) && be != nil:
		r.problem(Problem{Rule: kind + "-size", Path: f.Path, Field: "size", Claimed: fmt.Sprint(f.Size), Recomputed: be.Got,
			Message: fmt.Sprintf("the %s file has %s bytes; the evidence recorded %d: it was cut or changed after the run", what, be.Got, f.Size)})
	case errors.Is(err, bundle.ErrDigest) && be != nil:
		r.problem(Problem{Rule: kind + "-digest", Path: f.Path, Field: "sha256", Claimed: f.SHA256, Recomputed: be.Got,
			Message: fmt.Sprintf("the %s file's sha256 differs from the one the evidence recorded: it was changed after the run", what)})
	default:
		r.problem(Problem{Rule: kind + "-path", Path: f.Path, Message: fmt.Sprintf("rejected %s file: %v", what, err)})
	}
}

// profile reads the profile from the bundle: only the bytes whose sha256
// the evidence recorded are parsed. A profile that is refused by the
// gate is a problem (the layer cannot run); one that is the recorded file
// but not a valid profile is bad input.
func (r *reader) profile() error {
	pf := r.out.Evidence.Profile
	if !r.place("profile", pf.WitnessFile, r.base) {
		return nil
	}
	if pf.Size > profile.MaxBytes { // refused before a byte of it is read
		return fmt.Errorf("%w: the profile in the bundle, %s, has %d bytes by the evidence; a profile has at most %d",
			evidence.ErrBadInput, pf.Path, pf.Size, profile.MaxBytes)
	}
	f := r.verified("profile", "profile", pf.WitnessFile)
	if f == nil {
		return nil
	}
	data := make([]byte, f.Size())
	if _, err := f.Reader().ReadAt(data, 0); err != nil {
		r.problem(Problem{Rule: "profile-path", Path: pf.Path, Message: "the profile cannot be read: " + err.Error()})
		return nil
	}
	p, err := profile.Parse(pf.Path, data) // its messages name the file as the bundle does
	if err != nil {
		return fmt.Errorf("%w: the profile in the bundle, %s (sha256 %s), is not a valid profile:\n%w", evidence.ErrBadInput, pf.Path, pf.SHA256, err)
	}
	if p.Name != pf.Name {
		r.problem(Problem{Rule: "profile-name", Path: pf.Path, Field: "name", Claimed: pf.Name, Recomputed: p.Name,
			Message: fmt.Sprintf("the evidence names the profile %q; the profile in the bundle is named %q", pf.Name, p.Name)})
	}
	r.out.Profile = p
	return nil
}
