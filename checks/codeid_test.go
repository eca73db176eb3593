package checks

import (
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

const (
	testRev = "0123456789abcdef0123456789abcdef01234567"
	testSum = "89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
)

func goodBuild() *evidence.BuildInfo {
	return &evidence.BuildInfo{GoVersion: "go1.26.0", Module: "github.com/orderflow-audit/orderflow-audit",
		ModuleVersion: "(devel)", VCSRevision: testRev, VCSTime: "2026-01-01T00:00:00Z", Stamp: evidence.StampVCS}
}

func goodSource() *evidence.SourceDigest {
	return &evidence.SourceDigest{SHA256: testSum, Files: 40, Packages: append([]string(nil), spec.ReferenceSources...)}
}

// TestCodeThatRan: the build stamp and the source digest pass verification
// in their shape, and each way out of it fails build-info or
// source-digest; evidence without either (older versions) only warns.
func TestCodeThatRan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(ev *evidence.Evidence)
		rule  string // "" = passes
		warns bool
	}{
		{"stamped by the toolchain", func(*evidence.Evidence) {}, "", false},
		{"stamped by ldflags, modified", func(ev *evidence.Evidence) {
			ev.Tool.Build.Stamp, ev.Tool.Build.VCSModified, ev.Tool.Revision = evidence.StampLDFlags, true, testRev+" (modified)"
		}, "", false},
		{"not stamped", func(ev *evidence.Evidence) {
			ev.Tool.Build.Stamp, ev.Tool.Build.VCSRevision, ev.Tool.Build.VCSTime, ev.Tool.Revision = evidence.StampNone, "", "", "unknown"
		}, "", false},
		{"older evidence", func(ev *evidence.Evidence) { ev.Tool.Build, ev.Environment.SUT.Source = nil, nil }, "", true},
		{"not stamped but a revision", func(ev *evidence.Evidence) { ev.Tool.Build.Stamp = evidence.StampNone }, "build-info", false},
		{"revision not a commit id", func(ev *evidence.Evidence) {
			ev.Tool.Build.VCSRevision, ev.Tool.Revision = "main", "main"
		}, "build-info", false},
		{"revision disagrees", func(ev *evidence.Evidence) { ev.Tool.Revision = strings.Repeat("f", 40) }, "build-info", false},
		{"modified but not said", func(ev *evidence.Evidence) { ev.Tool.Build.VCSModified = true }, "build-info", false},
		{"unknown stamp", func(ev *evidence.Evidence) { ev.Tool.Build.Stamp = "git" }, "build-info", false},
		{"no toolchain", func(ev *evidence.Evidence) { ev.Tool.Build.GoVersion = "1.26" }, "build-info", false},
		{"no module", func(ev *evidence.Evidence) { ev.Tool.Build.ModuleVersion = "" }, "build-info", false},
		{"bad vcs time", func(ev *evidence.Evidence) { ev.Tool.Build.VCSTime = "yesterday" }, "build-info", false},
		{"source missing", func(ev *evidence.Evidence) { ev.Environment.SUT.Source = nil }, "source-digest", false},
		{"source not a sha256", func(ev *evidence.Evidence) { ev.Environment.SUT.Source.SHA256 = "abc" }, "source-digest", false},
		{"source of no file", func(ev *evidence.Evidence) { ev.Environment.SUT.Source.Files = 0 }, "source-digest", false},
		{"source outside the module", func(ev *evidence.Evidence) {
			ev.Environment.SUT.Source.Packages[0] = "../elsewhere"
		}, "source-digest", false},
		{"source of the wrong packages", func(ev *evidence.Evidence) {
			ev.Environment.SUT.Source.Packages = ev.Environment.SUT.Source.Packages[1:]
		}, "source-digest", false},
		{"packages unsorted", func(ev *evidence.Evidence) {
			ps := ev.Environment.SUT.Source.Packages
			ps[0], ps[1] = ps[1], ps[0]
		}, "source-digest", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := copyFixture(t, "u80")
			ev := readEvidence(t, p)
			ev.Tool.Revision, ev.Tool.Build = testRev, goodBuild()
			ev.Environment.SUT = &evidence.SUTEnv{Name: spec.ReferenceSUT, Source: goodSource()}
			for _, f := range spec.AllFeatures {
				ev.Environment.SUT.Features = append(ev.Environment.SUT.Features, string(f))
			}
			ev.Environment.SUT.Layers = layerNames(spec.Layers)
			tc.edit(ev)
			ev.ProofBoundary = evidence.ComputeProofBoundary(ev)
			writeEvidence(t, p, ev)
			v := verify(t, p)
			if tc.rule == "" && (v.Status != Pass || len(v.Reasons) > 0) {
				t.Fatalf("verdict %s, rules %v; want PASS", v.Status, rules(v))
			}
			if tc.rule != "" && (v.Status != Fail || !hasRule(v, tc.rule)) {
				t.Fatalf("verdict %s, rules %v; want FAIL with %s", v.Status, rules(v), tc.rule)
			}
			warned := false
			for _, w := range v.Warnings {
				warned = warned || strings.Contains(w, "tool.build") || strings.Contains(w, "source")
			}
			if warned != tc.warns {
				t.Errorf("warnings %q; want a warning about the missing records: %v", v.Warnings, tc.warns)
			}
		})
	}
}
