package checks

import (
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/checks/model/modeltest"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// TestRebalanceSettlingDerived: rebalanceSettling's ownership metrics from
// recorded histories: gaps at their bounds are not over them, gaps past
// them are, and the longest is in milliseconds; a history with fewer than
// two handoffs is not exercised.
func TestRebalanceSettlingDerived(t *testing.T) {
	for _, c := range []struct {
		history, want string
		exercised     bool
	}{
		{"ok-unowned-at-bound",
			"handoffs=2 unownedMaxMs=15000 overBound=0 commitsAfterRevoke=0 duplicates=0 effects=0 lag=0", true},
		{"partition-unowned-too-long--died",
			"handoffs=3 unownedMaxMs=15001 overBound=2 commitsAfterRevoke=0 duplicates=0 effects=0 lag=0", true},
		{"partition-unowned-too-long",
			"handoffs=1 unownedMaxMs=3001 overBound=1 commitsAfterRevoke=0 duplicates=0 effects=0 lag=0", false},
		{"ok-unowned-successor-joined-late",
			"handoffs=1 unownedMaxMs=3000 overBound=0 commitsAfterRevoke=0 duplicates=0 effects=0 lag=0", false},
	} {
		h := modeltest.Load(t, "model/testdata/histories/"+c.history)
		got, _ := derivedMetrics(t, "rebalanceSettling", h.Events...)
		if got != c.want {
			t.Errorf("%s: %s; want %s", c.history, got, c.want)
		}
		m := replayOf(h.Events)
		if why := derivations["rebalanceSettling"].exercised(facts{m: m}); (why == "") != c.exercised {
			t.Errorf("%s: exercised says %q; want exercised %v", c.history, why, c.exercised)
		}
	}
}

// replayOf folds events into a finished model.
func replayOf(events []evidence.Event) *Model {
	m := model.New(nil, nil)
	for i := range events {
		m.Step(&events[i], Source{Seq: int64(i + 1)})
	}
	m.Finish(false)
	return m
}
