package checks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// copyCommitted copies the committed reference evidence
// (evidence/example/u80.json and its logs, a real run of every scenario)
// into a temporary directory and returns the copied evidence path.
func copyCommitted(t testing.TB) string {
	t.Helper()
	src := filepath.Join("..", "evidence", "example")
	dst := t.TempDir()
	if err := os.CopyFS(filepath.Join(dst, "u80"), os.DirFS(filepath.Join(src, "u80"))); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(src, "u80.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dst, "u80.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// dropScenarios deletes scenarios from the evidence at path and recomputes
// the summary, boundaries and proof matrix, as a forger would.
func dropScenarios(t testing.TB, path string, ids ...string) {
	t.Helper()
	ev := readEvidence(t, path)
	n := len(ev.Scenarios)
	ev.Scenarios = slices.DeleteFunc(ev.Scenarios, func(s evidence.Scenario) bool { return slices.Contains(ids, s.ID) })
	if len(ev.Scenarios) != n-len(ids) {
		t.Fatalf("not every one of %v is in %s", ids, path)
	}
	rederive(t, path, ev)
}

// rederive recomputes the derived summary, boundaries and proof matrix of
// ev and writes it to path.
func rederive(t testing.TB, path string, ev *evidence.Evidence) {
	t.Helper()
	ev.Summary = evidence.Summarize(ev.Scenarios)
	ev.Boundaries = evidence.ComputeBoundaries(ev.Scenarios)
	ev.ProofClaims = ev.ProofClaims.Ran(ev.Scenarios)
	ev.ProofBoundary = evidence.ComputeProofBoundary(ev)
	writeEvidence(t, path, ev)
}

// reasonsOf returns the reasons of rule.
func reasonsOf(v *Verdict, rule string) []Reason {
	var out []Reason
	for _, r := range v.Reasons {
		if r.Rule == rule {
			out = append(out, r)
		}
	}
	return out
}

func scenariosOf(rs []Reason) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Scenario)
	}
	slices.Sort(out)
	return out
}

// TestScenarioSelection: the scenarios of the evidence must be those its
// run.selection selected; a boundary whose scenario did not run is unproven.
func TestScenarioSelection(t *testing.T) {
	t.Run("committed evidence, one scenario deleted", func(t *testing.T) {
		p := copyCommitted(t)
		dropScenarios(t, p, "noOversell")
		v := verify(t, p)
		if v.Status != Fail || !slices.Equal(scenariosOf(reasonsOf(v, "scenario-missing")), []string{"noOversell"}) {
			t.Fatalf("verdict %s %v; want FAIL scenario-missing noOversell", v.Status, v.Reasons)
		}
	})
	t.Run("committed evidence, boundary scenarios deleted", func(t *testing.T) {
		p := copyCommitted(t)
		dropScenarios(t, p, "sendBeforeMarkCrash", "offsetReplay")
		v := verify(t, p)
		want := []string{"offsetReplay", "sendBeforeMarkCrash"}
		if v.Status != Fail || !slices.Equal(scenariosOf(reasonsOf(v, "scenario-missing")), want) ||
			!slices.Equal(scenariosOf(reasonsOf(v, "boundary-not-run")), want) {
			t.Fatalf("verdict %s %v; want FAIL scenario-missing and boundary-not-run for %v", v.Status, rules(v), want)
		}
	})
	t.Run("selected subset, one deleted", func(t *testing.T) {
		p := copyFixture(t, "u80") // --scenarios txBoundaryRollback,normalChain,...
		dropScenarios(t, p, "normalChain")
		v := verify(t, p)
		if v.Status != Fail || !slices.Equal(scenariosOf(reasonsOf(v, "scenario-missing")), []string{"normalChain"}) {
			t.Fatalf("verdict %s %v; want FAIL scenario-missing normalChain", v.Status, rules(v))
		}
	})
	t.Run("present but not selected", func(t *testing.T) {
		p := copyFixture(t, "u80")
		ev := readEvidence(t, p)
		ev.Run.Selection.Scenarios = []string{"normalChain", "offsetReplay", "txBoundaryRollback", "sendBeforeMarkCrash"}
		writeEvidence(t, p, ev)
		v := verify(t, p)
		if v.Status != Fail || !slices.Equal(scenariosOf(reasonsOf(v, "scenario-not-selected")), []string{"businessInvariants"}) {
			t.Fatalf("verdict %s %v; want FAIL scenario-not-selected businessInvariants", v.Status, rules(v))
		}
	})
	t.Run("subset without boundaries", func(t *testing.T) {
		p := copyFixture(t, "u80")
		ev := readEvidence(t, p)
		ev.Run.Selection.Scenarios = []string{"normalChain", "businessInvariants"}
		ev.Scenarios = slices.DeleteFunc(ev.Scenarios, func(s evidence.Scenario) bool { return s.Boundary != evidence.BoundaryNone })
		// The run's witnesses hold the scenarios left out (witness-scenario-unlisted):
		// a run of the two would not have them.
		ev.Witness = &evidence.Witness{Missing: []string{"database: not of this subset", "broker: not of this subset"}}
		rederive(t, p, ev)
		v := verify(t, p)
		rs := reasonsOf(v, "boundary-not-run")
		if v.Status != Inconclusive || len(rs) != 3 || len(rs)+len(reasonsOf(v, "witness-missing")) != len(v.Reasons) {
			t.Fatalf("verdict %s %+v; want INCONCLUSIVE with three boundary-not-run only (and the witnesses missing)", v.Status, v.Reasons)
		}
		for _, r := range rs {
			if !strings.Contains(r.Message, "unproven in this run") || !strings.Contains(r.Message, "not selected") {
				t.Errorf("message %q does not say the boundary is unproven because it was not selected", r.Message)
			}
		}
	})
	t.Run("boundary scenario not run", func(t *testing.T) {
		p := copyFixture(t, "u80")
		ev := readEvidence(t, p)
		sc := &ev.Scenarios[slices.IndexFunc(ev.Scenarios, func(s evidence.Scenario) bool { return s.ID == "offsetReplay" })]
		*sc = evidence.Scenario{ID: sc.ID, Suite: sc.Suite, Boundary: sc.Boundary, Description: sc.Description,
			FaultPoints: sc.FaultPoints, Status: evidence.StatusNotRun, Reason: "run interrupted before this scenario started",
			Metrics: []evidence.Metric{}, Topics: []string{}, Logs: []evidence.LogRef{},
			Invariants: []evidence.InvariantResult{}, Tables: []evidence.TableDigest{}}
		sc.Line = evidence.FormatLine(sc.Suite, sc.ID, sc.Status, nil)
		rederive(t, p, ev)
		v := verify(t, p)
		if v.Status != Inconclusive || !hasRule(v, "scenario-not-run") || len(reasonsOf(v, "boundary-not-run")) != 1 ||
			strings.Contains(reasonsOf(v, "boundary-not-run")[0].Message, "not selected") {
			t.Fatalf("verdict %s %+v; want INCONCLUSIVE with scenario-not-run and boundary-not-run (ack, selected)", v.Status, v.Reasons)
		}
	})
	t.Run("selection not recorded", func(t *testing.T) {
		p := copyFixture(t, "u80")
		ev := readEvidence(t, p)
		ev.Run.Selection = nil
		writeEvidence(t, p, ev)
		v := verify(t, p)
		if v.Status != Inconclusive || len(v.Reasons) != 1 || v.Reasons[0].Rule != "selection-missing" {
			t.Fatalf("verdict %s %+v; want INCONCLUSIVE selection-missing only", v.Status, v.Reasons)
		}
	})
	// run.args are for display: a flag this verifier has never heard of
	// (a newer run's) changes nothing.
	t.Run("args with a flag the verifier does not know", func(t *testing.T) {
		p := copyFixture(t, "u80")
		ev := readEvidence(t, p)
		ev.Run.Args = append(ev.Run.Args, "--frobnicate", "7", "positional")
		writeEvidence(t, p, ev)
		if v := verify(t, p); v.Status != Pass {
			t.Fatalf("verdict %s %+v; want PASS", v.Status, v.Reasons)
		}
	})
}
