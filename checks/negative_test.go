package checks

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// TestNegativeControls: a run that says a bug was planted must show it.
// Clean evidence relabelled as planted (run.planted and the --plant of
// run.args) would otherwise verify as a plain PASS: a negative control
// that did not trip proves nothing.
func TestNegativeControls(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fixture  string
		scenario string // keep only this one (only); "" keeps every scenario
		planted  string
		plantArg string // the --plant of run.args ("": none), as the runner records it
		status   Status
		rule     string // the reason of that status; "" when none is added
	}{
		// The clean U80 fixture holds every exposing scenario but
		// orderCrashWindow and concurrentRelays.
		{"clean relabelled mark-without-token", "u80", "", "mark-without-token", "mark-without-token", Fail, "negative-control-not-tripped"},
		{"clean relabelled mark-before-publish", "u80", "", "mark-before-publish", "mark-before-publish", Fail, "negative-control-not-tripped"},
		{"clean relabelled offset-before-effect", "u80", "", "offset-before-effect", "offset-before-effect", Fail, "negative-control-not-tripped"},
		{"clean relabelled no-inbox-dedupe", "u80", "", "no-inbox-dedupe", "no-inbox-dedupe", Fail, "negative-control-not-tripped"},
		{"clean relabelled, one exposing scenario of two", "u80", "offsetReplay", "no-inbox-dedupe", "no-inbox-dedupe", Fail, "negative-control-not-tripped"},
		{"exposing scenario not run", "u80", "", "outbox-outside-tx", "outbox-outside-tx", Inconclusive, "negative-control-not-run"},
		{"exposing scenario not run (claim)", "u80", "", "claim-without-lock", "claim-without-lock", Inconclusive, "negative-control-not-run"},
		{"unknown bug", "u80", "", "mark-twice", "mark-twice", Fail, "planted-unknown"},
		{"run.planted without selection.plant", filepath.Join("planted", "mark-without-token"), "", "mark-without-token", "", Fail, "planted-mismatch"},
		{"selection.plant without run.planted", filepath.Join("planted", "mark-without-token"), "", "", "mark-without-token", Fail, "planted-mismatch"},
		{"tripped", filepath.Join("planted", "mark-without-token"), "", "mark-without-token", "mark-without-token", Fail, ""},
		{"tripped in another scenario", filepath.Join("planted", "mark-before-publish"), "", "mark-before-publish", "mark-before-publish", Fail, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := copyFixture(t, tc.fixture)
			if tc.scenario != "" {
				only(t, p, tc.scenario)
			}
			ev := readEvidence(t, p)
			ev.Run.Planted = tc.planted
			ev.Run.Selection.Plant = tc.plantArg
			rederive(t, p, ev)
			v := verify(t, p)
			for _, rule := range []string{"negative-control-not-tripped", "negative-control-not-run", "planted-unknown", "planted-mismatch"} {
				if got := hasRule(v, rule); got != (rule == tc.rule) {
					t.Errorf("rules %v: has %s = %v", rules(v), rule, got)
				}
			}
			if v.Status != tc.status {
				t.Fatalf("verdict %s %+v; want %s", v.Status, v.Reasons, tc.status)
			}
			if tc.rule == "" {
				return
			}
			r := reasonsOf(v, tc.rule)[0]
			if r.Status != tc.status || r.Message == "" {
				t.Errorf("reason %+v; want status %s and a message", r, tc.status)
			}
		})
	}
}

// TestNegativeControlsMatchDocs: the verifier's table is the one of
// docs/negative-controls.md (bug, exposing scenarios, verifier rules before
// the invariants).
func TestNegativeControlsMatchDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "negative-controls.md"))
	if err != nil {
		t.Fatal(err)
	}
	tick := regexp.MustCompile("`([^`]+)`")
	paren := regexp.MustCompile(`\([^)]*\)`)
	names := func(s string) []string {
		var out []string
		for _, m := range tick.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		return out
	}
	type negativeControl struct{ scenarios, rules []string }
	docs := map[string]negativeControl{}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cols := strings.Split(l, "|")
		if len(cols) < 7 {
			t.Fatalf("row %q has %d columns", l, len(cols))
		}
		rulesCol, _, _ := strings.Cut(cols[5], ";")
		rulesCol = paren.ReplaceAllString(rulesCol, "") // explanations name event kinds
		docs[names(cols[1])[0]] = negativeControl{scenarios: names(cols[3]), rules: names(rulesCol)}
	}
	if len(docs) == 0 {
		t.Fatal("no rows in docs/negative-controls.md")
	}
	for bug, d := range docs {
		nc, ok := spec.LookupPlant(bug)
		if !ok || !slices.Equal(nc.Scenarios(), d.scenarios) || !slices.Equal(nc.Rules(), d.rules) {
			t.Errorf("%s: spec %+v, docs %+v", bug, nc, d)
		}
	}
	for _, p := range spec.Plants {
		if _, ok := docs[p.Bug]; !ok {
			t.Errorf("%s is not in docs/negative-controls.md", p.Bug)
		}
	}
}
