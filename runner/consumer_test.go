package runner_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner"
)

// TestSeparateTxSeenByGTID: on the default private server (binary log on)
// every inbox_insert and effect of effectDbError names its transaction's
// GTID, one per record, and the planted inbox-and-effect-separate-tx is
// caught by effect-outside-inbox-tx (the external test server has no
// binary log, so TestPlantedBugMakesScenarioFail sees only its other
// rule).
func TestSeparateTxSeenByGTID(t *testing.T) {
	for _, tc := range []struct {
		bug  string
		want string // the rule verify must name ("" = PASS up to the boundaries)
	}{
		{"", ""},
		{"inbox-and-effect-separate-tx", "effect-outside-inbox-tx"},
	} {
		t.Run("plant="+tc.bug, func(t *testing.T) {
			opts, _ := defaultOpts(t, "effectDbError")
			bug, err := runner.ParsePlant(tc.bug)
			if err != nil {
				t.Fatal(err)
			}
			opts.Plant = bug
			ev, err := runner.Run(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.bug == "" {
				trx := map[string][]string{}
				for _, e := range readEvents(t, opts.Out, ev.Scenarios[0]) {
					if e.Kind == evidence.KindInboxInsert || e.Kind == evidence.KindEffect {
						trx[e.EventID] = append(trx[e.EventID], e.TrxID)
					}
				}
				if len(trx) != 3 {
					t.Fatalf("inbox and effect events of %d events; want 3", len(trx))
				}
				for id, ts := range trx {
					if len(ts) != 2 || ts[0] == "" || ts[0] != ts[1] {
						t.Errorf("%s: trx_id of its inbox_insert and effect = %q; want one GTID", id, ts)
					}
				}
			}
			v, err := checks.Verify(t.Context(), opts.Out, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, r := range v.Reasons {
				if r.Rule != "boundary-not-run" {
					rules = append(rules, r.Rule)
				}
			}
			if tc.want == "" && len(rules) > 0 || tc.want != "" && !slices.Contains(rules, tc.want) {
				t.Errorf("verify named %v; want %q", rules, tc.want)
			}
		})
	}
}

// readEvents reads every event log of sc in the evidence at out.
func readEvents(t *testing.T, out string, sc evidence.Scenario) []evidence.Event {
	t.Helper()
	var all []evidence.Event
	for _, l := range sc.Logs {
		es, err := evidence.ReadEvents(filepath.Join(filepath.Dir(out), filepath.FromSlash(l.Path)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, es...)
	}
	return all
}
