//go:build unix

package checks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
)

// Hostile bundles against the gate (evidence/bundle): files that are not
// plain regular files of the bundle, or that would cost unbounded time or
// memory to read. Each must end, fast, in a refusal naming the file: bad
// input for the evidence file, a FAIL reason for a log or a witness file.
// Each case runs under a deadline, since the failure before the gate was
// a hang.

// TestGateEvidenceFile: an evidence file that is not a plain regular file
// is bad input naming it, at once.
func TestGateEvidenceFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, p string)
		want string
	}{
		{"FIFO", evidencetest.Mkfifo, "FIFO"},
		{"symlink to /dev/zero", func(t *testing.T, p string) { os.Symlink("/dev/zero", p) }, "character device"},
		{"character device", evidencetest.MknodZero, "character device"},
		{"hard link x2", func(t *testing.T, p string) {
			src := copyFixture(t, "u80")
			os.Rename(filepath.Dir(src)+"/u80", filepath.Dir(p)+"/u80")
			os.Rename(src, p)
			os.Link(p, p+".bak")
		}, "hard link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "u80.json")
			tc.make(t, p)
			err := evidencetest.Within(t, func() error { _, err := Verify(t.Context(), p, Options{}); return err })
			if !errors.Is(err, evidence.ErrBadInput) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want bad input naming %s and saying %q", err, p, tc.want)
			}
		})
	}
}

// normalChainLog is the log the log cases replace.
const normalChainLog = "u80/normalChain/consumer-1.jsonl"

// TestGateLogs: an event log that is not a plain regular file of the
// bundle fails with log-path naming it, at once.
func TestGateLogs(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir, log string)
		want string
	}{
		{"FIFO", func(t *testing.T, dir, log string) { os.Remove(log); evidencetest.Mkfifo(t, log) }, "FIFO"},
		{"relative symlink staying inside", func(t *testing.T, dir, log string) {
			os.Rename(log, filepath.Join(dir, "u80", "kept.jsonl"))
			os.Symlink("../kept.jsonl", log)
		}, "symbolic link"},
		{"symlink to /dev/zero", func(t *testing.T, dir, log string) { os.Remove(log); os.Symlink("/dev/zero", log) }, "symbolic link"},
		{"character device", func(t *testing.T, dir, log string) { os.Remove(log); evidencetest.MknodZero(t, log) }, "character device"},
		{"directory", func(t *testing.T, dir, log string) { os.Remove(log); os.Mkdir(log, 0o755) }, "directory"},
		{"hard link x2", func(t *testing.T, dir, log string) { os.Link(log, filepath.Join(dir, "u80", "again.jsonl")) }, "hard link"},
		{"sparse, over the log limit", func(t *testing.T, dir, log string) {
			os.Remove(log)
			evidencetest.SparseFile(t, log, bundle.MaxLogBytes+1)
		}, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := copyFixture(t, "u80")
			only(t, p, "normalChain")
			tc.edit(t, filepath.Dir(p), filepath.Join(filepath.Dir(p), filepath.FromSlash(normalChainLog)))
			v := evidencetest.Within(t, func() *Verdict { return verify(t, p) })
			r, ok := reasonFor(v, "log-path", normalChainLog)
			if v.Status != Fail || !ok || !strings.Contains(r.Message, tc.want) {
				t.Fatalf("verdict %s %v; want FAIL log-path at %s saying %q: %+v", v.Status, rules(v), normalChainLog, tc.want, r)
			}
		})
	}
}

// TestGateManyHardLinks: 60 hard links to one 128 MiB sparse log, each
// listed as a log of the scenario (the schema allows 64): before the gate
// each was read and hashed (7.5 GB, tens of seconds); now each is refused
// from its link count.
func TestGateManyHardLinks(t *testing.T) {
	p := copyFixture(t, "u80")
	only(t, p, "normalChain")
	dir := filepath.Dir(p)
	big := filepath.Join(dir, "u80", "big.jsonl")
	evidencetest.SparseFile(t, big, 128<<20)
	ev := readEvidence(t, p)
	sc := &ev.Scenarios[0]
	for i := range 60 {
		rel := fmt.Sprintf("u80/normalChain/link-%03d.jsonl", i)
		if err := os.Link(big, filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
			t.Fatal(err)
		}
		sc.Logs = append(sc.Logs, evidence.LogRef{Path: rel, Actor: "consumer-1", SHA256: strings.Repeat("0", 64), Lines: 0})
	}
	writeEvidence(t, p, ev)
	v := evidencetest.Within(t, func() *Verdict { return verify(t, p) })
	if r, ok := reasonFor(v, "log-path", "u80/normalChain/link-000.jsonl"); v.Status != Fail || !ok || !strings.Contains(r.Message, "hard link") {
		t.Fatalf("verdict %s %v; want FAIL log-path for the linked logs: %+v", v.Status, rules(v), r)
	}
}

func reasonFor(v *Verdict, rule, log string) (Reason, bool) {
	for _, r := range v.Reasons {
		if r.Rule == rule && r.Log == log {
			return r, true
		}
	}
	return Reason{}, false
}

// TestGateVerifyWitnessSymlink: end to end, a witness file that is a
// relative symlink inside the bundle fails the verdict, naming the file.
func TestGateVerifyWitnessSymlink(t *testing.T) {
	p := copyFixture(t, "witnessed")
	dir := filepath.Dir(p)
	bl := filepath.Join(dir, fixtureBinlog)
	os.Rename(bl, filepath.Join(dir, "u80", "binlog.kept"))
	os.Symlink("../../binlog.kept", bl)
	v := evidencetest.Within(t, func() *Verdict { return verify(t, p) })
	r, ok := witnessReason(v, "witness-path")
	if v.Status != Fail || !ok || r.Witness != fixtureBinlog {
		t.Fatalf("verdict %s %v; want FAIL witness-path at %s: %+v", v.Status, rules(v), fixtureBinlog, r)
	}
}
