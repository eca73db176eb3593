package blackbox_test

import (
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// TestTimeline: the first lost event's story is told from the binlog in
// commit order, each step on its transaction; a run that lost nothing has
// none.
func TestTimeline(t *testing.T) {
	// A cursor relay skips u-2: the cursor stands at 1, u-3 (offset 3)
	// commits, the cursor moves to 3 although offset 2 is not committed,
	// then u-2 commits at offset 2 and the cursor moves on to 4.
	// A cursor relay skips u-2: the cursor stands at 1, u-4 (offset 4)
	// commits, the relay's next transaction writes the cursor row (still
	// at 1, as Watermill's offset_consumed update does), commits u-3 and
	// sets the cursor to 4 although offset 2 is not committed, then u-2
	// commits at offset 2 and the cursor moves on to 5. Only u-4 committed
	// before the cursor passed 2.
	skipped := legalCursor()
	skipped.txs = [][]binlog.RowChange{
		{ins("watermill_t", wmRow(1, "u-1"))},
		{cursorAt(1)},
		{ins("watermill_t", wmRow(4, "u-4"))},
		{cursorStays(1), ins("watermill_t", wmRow(3, "u-3")), cursorAt(4)},
		{ins("watermill_t", wmRow(2, "u-2"))},
		{cursorAt(5)},
	}
	skipped.parts = [][]broker.Record{{wmRec(0, "u-1", "a1"), wmRec(1, "u-4", "a1"), wmRec(2, "u-3", "a1")}}

	// The cursor passes u-2 in the transaction that commits it, and u-2
	// is never published.
	same := legalCursor()
	same.txs = [][]binlog.RowChange{{ins("watermill_t", wmRow(1, "u-1"))}, {ins("watermill_t", wmRow(2, "u-2")), cursorAt(2)}}
	same.parts[0] = same.parts[0][:1]

	// A cursor relay acks u-2 after it committed, without publishing it.
	acked := legalCursor()
	acked.parts[0] = acked.parts[0][:1]

	// A completed-at relay marks e-2 completed and never publishes it.
	completed := legalCompleted()
	completed.parts[0] = completed.parts[0][:1]
	completed.groups[0] = 1

	for _, tc := range []struct {
		name     string
		f        *fixture
		rule     string
		event    string
		position string
		// steps: the GTID sequence number of each step's transaction (the
		// fixture's transaction i is 0-1-(i+1)) and a phrase of its text.
		steps []step
	}{
		{"skipped", skipped, blackbox.RuleLostSkipped, "u-2", "2", []step{
			{"0-1-2", "set to 1, below the event's position 2"},
			{"0-1-3", "1 row(s) above position 2 committed before the cursor passed it (positions 4 to 4)"},
			{"0-1-4", "set to 4: past the event's position 2, where no committed row held it yet"},
			{"0-1-5", "event u-2's row committed at position 2"},
			{"0-1-6", "set to 5, not below 2 again"},
		}},
		{"same transaction", same, blackbox.RuleLostAcked, "u-2", "2", []step{
			{"0-1-2", "set to 2: past the event's position 2, where its row commits in this same transaction"},
			{"0-1-2", "event u-2's row committed at position 2"},
		}},
		{"acked", acked, blackbox.RuleLostAcked, "u-2", "2", []step{
			{"0-1-2", "event u-2's row committed at position 2"},
			{"0-1-3", "set to 2: past the event's position 2, where its row had committed"},
		}},
		{"completed", completed, blackbox.RuleLostAcked, "e-2", "", []step{
			{"0-1-2", "event e-2's row committed"},
			{"0-1-4", "the relay's progress passed the event: its row's outbox.sent_at set"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := blackbox.Check(tc.f.input(t))
			if err != nil {
				t.Fatal(err)
			}
			tl := res.Timeline
			if tl == nil {
				t.Fatalf("no timeline; reasons %v", res.Reasons)
			}
			if tl.Rule != tc.rule || tl.Event != tc.event || tl.Position != tc.position {
				t.Errorf("timeline of %s %s at %q; want %s %s at %q", tl.Rule, tl.Event, tl.Position, tc.rule, tc.event, tc.position)
			}
			if len(tl.Steps) != len(tc.steps) {
				t.Fatalf("%d steps; want %d:\n%s", len(tl.Steps), len(tc.steps), showSteps(tl.Steps))
			}
			for i, want := range tc.steps {
				got := tl.Steps[i]
				if got.GTID != want.gtid || !strings.Contains(got.What, want.what) || got.Binlog == "" || got.Started == "" {
					t.Errorf("step %d: %s %s %s %q; want gtid %s saying %q", i+1, got.GTID, got.Binlog, got.Started, got.What, want.gtid, want.what)
				}
			}
		})
	}

	res, err := blackbox.Check(legalCursor().input(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != blackbox.Pass || res.Timeline != nil {
		t.Errorf("a legal run: %s with timeline %+v; want PASS and none", res.Status, res.Timeline)
	}
}

type step struct{ gtid, what string }

// cursorStays writes the cursor row without moving it.
func cursorStays(v int64) binlog.RowChange {
	return upd("watermill_offsets_t", map[string]any{"consumer_group": "fwd", "offset_acked": v},
		map[string]any{"consumer_group": "fwd", "offset_acked": v})
}

func showSteps(steps []blackbox.Step) string {
	var b strings.Builder
	for _, s := range steps {
		b.WriteString(s.GTID + " " + s.What + "\n")
	}
	return b.String()
}
