package reports

import (
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// TestBuildAndSourceRows: the run-and-environment table names the code
// that ran: the build stamp (and where the revision comes from) and the
// system under test's source digest.
func TestBuildAndSourceRows(t *testing.T) {
	rev := strings.Repeat("a", 40)
	for _, tc := range []struct {
		b    *evidence.BuildInfo
		want []string
	}{
		{nil, []string{"not recorded"}},
		{&evidence.BuildInfo{GoVersion: "go1.26.0", Module: "m", ModuleVersion: "(devel)", VCSRevision: rev, VCSModified: true,
			VCSTime: "2026-01-01T00:00:00Z", Stamp: evidence.StampVCS},
			[]string{"m (devel), go1.26.0", "vcs revision " + rev, "modified yes", "committed 2026-01-01T00:00:00Z"}},
		{&evidence.BuildInfo{GoVersion: "go1.26.0", Module: "m", ModuleVersion: "(devel)", VCSRevision: rev, Stamp: evidence.StampLDFlags},
			[]string{"revision " + rev + " (passed by -ldflags", "modified no"}},
		{&evidence.BuildInfo{GoVersion: "go1.26.0", Module: "m", ModuleVersion: "(devel)", Stamp: evidence.StampNone},
			[]string{"not stamped"}},
	} {
		got := buildRow(tc.b)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("buildRow(%+v) = %q; want it to say %q", tc.b, got, w)
			}
		}
	}
	sum := strings.Repeat("b", 64)
	got := sutRow(&evidence.SUTEnv{Name: "ref", Source: &evidence.SourceDigest{SHA256: sum, Files: 3, Packages: []string{"x", "y"}}})
	if want := "ref; source sha256 " + sum + " (3 files of x, y)"; got != want {
		t.Errorf("sutRow = %q; want %q", got, want)
	}
	if got := sutRow(&evidence.SUTEnv{Name: "ref"}); !strings.Contains(got, "not recorded") {
		t.Errorf("sutRow without a digest = %q", got)
	}
}
