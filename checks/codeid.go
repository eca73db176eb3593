package checks

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The code that ran: the evidence names the binary (tool.build, what the
// Go toolchain stamped into it) and the system under test's source
// (environment.system_under_test.source, a digest of the files built into
// it). The verifier cannot rebuild them; it checks that what is said has
// the shape of a real stamp and digest, that the revision agrees with the
// tool's, and that the reference implementation's digest covers its
// packages. Evidence of versions before these records gets a warning.

var (
	hexRevision = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	hexSHA256   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	goVersion   = regexp.MustCompile(`^(go[0-9]+\.[0-9]+|devel )`)
)

// codeThatRan checks tool.build (build-info) and the system under test's
// source digest (source-digest).
func (c *checker) codeThatRan() {
	b := c.ev.Tool.Build
	if b == nil {
		c.v.Warnings = append(c.v.Warnings, "the evidence does not say how its binary was built (tool.build): "+
			"evidence of a version before it was recorded; the code that ran is named only by tool.revision")
	} else {
		for _, why := range buildProblems(c.ev.Tool) {
			c.fail("", "build-info", "tool.build: %s", why)
		}
	}
	s := c.ev.Environment.SUT
	switch {
	case s == nil || s.Source == nil:
		if b != nil && (s == nil || s.Name == spec.ReferenceSUT) {
			c.fail("", "source-digest", "the evidence records how its binary was built but not the digest of the reference "+
				"implementation's source (environment.system_under_test.source): the code that ran is not named")
		} else if s == nil || s.Name == spec.ReferenceSUT {
			c.v.Warnings = append(c.v.Warnings, "the evidence has no digest of the system under test's source: "+
				"evidence of a version before it was recorded")
		}
	default:
		for _, why := range sourceProblems(s) {
			c.fail("", "source-digest", "environment.system_under_test.source: %s", why)
		}
	}
}

// buildProblems says what is wrong with the shape of t.Build.
func buildProblems(t evidence.Tool) []string {
	b := t.Build
	var out []string
	if !goVersion.MatchString(b.GoVersion) {
		out = append(out, fmt.Sprintf("go_version %q is not a Go toolchain version", b.GoVersion))
	}
	if b.Module == "" || b.ModuleVersion == "" {
		out = append(out, "module and module_version are required (a local build's version is \"(devel)\")")
	}
	switch b.Stamp {
	case evidence.StampNone:
		if b.VCSRevision != "" || b.VCSModified || t.Revision != "unknown" {
			out = append(out, fmt.Sprintf("stamp none, but a revision is given (vcs_revision %q, tool.revision %q)", b.VCSRevision, t.Revision))
		}
	case evidence.StampVCS, evidence.StampLDFlags:
		want := b.VCSRevision
		if b.VCSModified {
			want += " (modified)"
		}
		if !hexRevision.MatchString(b.VCSRevision) {
			out = append(out, fmt.Sprintf("vcs_revision %q is not a commit id (40 or 64 hex digits)", b.VCSRevision))
		} else if t.Revision != want {
			out = append(out, fmt.Sprintf("tool.revision %q disagrees with the build's %q", t.Revision, want))
		}
	default:
		out = append(out, fmt.Sprintf("stamp %q is not one of vcs, ldflags, none", b.Stamp))
	}
	if b.VCSTime != "" {
		if _, err := time.Parse(time.RFC3339, b.VCSTime); err != nil {
			out = append(out, fmt.Sprintf("vcs_time %q is not an RFC 3339 time", b.VCSTime))
		}
	}
	return out
}

// sourceProblems says what is wrong with the shape of s.Source.
func sourceProblems(s *evidence.SUTEnv) []string {
	d := s.Source
	var out []string
	if !hexSHA256.MatchString(d.SHA256) {
		out = append(out, fmt.Sprintf("sha256 %q is not 64 hex digits", d.SHA256))
	}
	if d.Files < 1 {
		out = append(out, fmt.Sprintf("files %d: a digest of no file names no code", d.Files))
	}
	for _, p := range d.Packages {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || strings.HasPrefix(p, "..") {
			out = append(out, fmt.Sprintf("package %q is not a directory of the module", p))
		}
	}
	if !slices.IsSorted(d.Packages) {
		out = append(out, "packages are not sorted")
	}
	if s.Name == spec.ReferenceSUT && !slices.Equal(d.Packages, spec.ReferenceSources) {
		out = append(out, fmt.Sprintf("the reference implementation's source is %s, not %s",
			strings.Join(spec.ReferenceSources, ", "), strings.Join(d.Packages, ", ")))
	}
	return out
}
