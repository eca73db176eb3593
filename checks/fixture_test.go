package checks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// copyFixture copies testdata/<name> (an evidence file and its logs) into
// a temporary directory and returns the path of the copied evidence file.
// The boundary table and the proof-boundary matrix are recomputed when
// evidence/proof.go words them differently from the run that made the
// fixture (they are derived data; the checks on them have their own tests),
// so these fixtures test the verifier, not the wording of proof.go.
func copyFixture(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	dst := t.TempDir()
	err := os.CopyFS(dst, os.DirFS(src))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dst, "u80.json")
	ev := readEvidence(t, path)
	b, p := evidence.ComputeBoundaries(ev.Scenarios), evidence.ComputeProofBoundary(ev)
	if !jsonEqual(t, b, ev.Boundaries) || !jsonEqual(t, p, ev.ProofBoundary) {
		ev.Boundaries, ev.ProofBoundary = b, p
		writeEvidence(t, path, ev)
	}
	return path
}

func jsonEqual(t testing.TB, a, b any) bool {
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(x) == string(y)
}

func readEvidence(t testing.TB, path string) *evidence.Evidence {
	t.Helper()
	ev, _, err := evidence.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func writeEvidence(t testing.TB, path string, ev *evidence.Evidence) {
	t.Helper()
	if err := evidence.WriteFile(path, ev); err != nil {
		t.Fatal(err)
	}
}

// only keeps one scenario of the evidence at path, as a run with
// --scenarios <scenario> would have written it (run.args select it alone;
// the derived summary, boundaries and proof matrix are recomputed), so
// that a test can verify it alone. Such evidence leaves the boundaries of
// the other scenarios unproven: see clean. The witnesses of the whole run
// hold the other scenarios too, which a run of the one would not: only
// lists them as missing (so they are not read), and the tests of the
// witnesses use onlyWitnessed.
func only(t testing.TB, path, scenario string) {
	t.Helper()
	onlyScenario(t, path, scenario, false)
}

// onlyWitnessed is only keeping the witnesses (which then also hold the
// scenarios left out: witness-scenario-unlisted).
func onlyWitnessed(t testing.TB, path, scenario string) {
	t.Helper()
	onlyScenario(t, path, scenario, true)
}

func onlyScenario(t testing.TB, path, scenario string, keepWitness bool) {
	t.Helper()
	ev := readEvidence(t, path)
	if !keepWitness {
		ev.Witness = &evidence.Witness{Missing: []string{
			"database: left out by the test helper only, which keeps one scenario of a run of several",
			"broker: left out by the test helper only, which keeps one scenario of a run of several",
		}}
	}
	ev.Scenarios = slices.DeleteFunc(ev.Scenarios, func(s evidence.Scenario) bool { return s.ID != scenario })
	if len(ev.Scenarios) != 1 {
		t.Fatalf("no scenario %s", scenario)
	}
	ev.Run.Args = []string{"--scenarios", scenario, "--out", "u80.json"}
	ev.Run.Selection = &evidence.Selection{Scenarios: []string{scenario}, Plant: ev.Run.Planted}
	ev.Summary = evidence.Summarize(ev.Scenarios)
	ev.Boundaries = evidence.ComputeBoundaries(ev.Scenarios)
	ev.ProofClaims = ev.ProofClaims.Ran(ev.Scenarios)
	ev.ProofBoundary = evidence.ComputeProofBoundary(ev)
	writeEvidence(t, path, ev)
}

// reseal records the current sha256 and line count of every log in the
// evidence, as a forger who rewrites the logs would.
func reseal(t testing.TB, path string) {
	t.Helper()
	ev := readEvidence(t, path)
	dir := filepath.Dir(path)
	for i := range ev.Scenarios {
		for j := range ev.Scenarios[i].Logs {
			ref := &ev.Scenarios[i].Logs[j]
			sum, lines, err := evidence.FileDigest(filepath.Join(dir, filepath.FromSlash(ref.Path)))
			if err != nil {
				t.Fatal(err)
			}
			ref.SHA256, ref.Lines = sum, lines
		}
	}
	writeEvidence(t, path, ev)
}

func verify(t testing.TB, path string) *Verdict {
	t.Helper()
	v, err := Verify(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// clean reports whether v found nothing but the boundaries a partial run
// leaves unproven (boundary-not-run) and the witnesses only leaves out
// (witness-missing): what a single-scenario copy of a clean run gets.
func clean(v *Verdict) bool {
	return !slices.ContainsFunc(v.Reasons, func(r Reason) bool { return r.Rule != "boundary-not-run" && r.Rule != "witness-missing" })
}

func rules(v *Verdict) []string {
	var out []string
	for _, r := range v.Reasons {
		if !slices.Contains(out, r.Rule) {
			out = append(out, r.Rule)
		}
	}
	slices.Sort(out)
	return out
}

func hasRule(v *Verdict, rule string) bool {
	return slices.ContainsFunc(v.Reasons, func(r Reason) bool { return r.Rule == rule })
}

// readLines returns the lines of a file, each with its newline (a last
// line without one is returned as it is).
func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func writeLines(t testing.TB, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// scenarioFixtures prepares, once per test, a single-scenario copy of the
// clean U80 fixture for each scenario; copyScenario then copies one of
// them cheaply (no schema validation in between: Verify does that).
type scenarioFixtures struct {
	dirs map[string]string
}

func newScenarioFixtures(t *testing.T) *scenarioFixtures {
	t.Helper()
	sf := &scenarioFixtures{dirs: map[string]string{}}
	for _, sc := range readEvidence(t, copyFixture(t, "u80")).Scenarios {
		p := copyFixture(t, "u80")
		only(t, p, sc.ID)
		sf.dirs[sc.ID] = filepath.Dir(p)
	}
	return sf
}

// copyScenario copies the prepared fixture of scenario and returns the
// evidence path and its decoded evidence.
func (sf *scenarioFixtures) copyScenario(t *testing.T, scenario string) (string, *evidence.Evidence) {
	t.Helper()
	src := sf.dirs[scenario]
	dst := t.TempDir()
	err := os.CopyFS(dst, os.DirFS(src))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dst, "u80.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev evidence.Evidence
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "u80.json"), &ev
}

// resealFast records the sha256 and line count of one rewritten log and
// writes the evidence without validating it.
func resealFast(t *testing.T, path string, ev *evidence.Evidence, log string) {
	t.Helper()
	sum, lines, err := evidence.FileDigest(filepath.Join(filepath.Dir(path), filepath.FromSlash(log)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range ev.Scenarios {
		for j := range ev.Scenarios[i].Logs {
			if ref := &ev.Scenarios[i].Logs[j]; ref.Path == log {
				ref.SHA256, ref.Lines = sum, lines
			}
		}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
