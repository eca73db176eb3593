package consumer_test

import (
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

func batched(cfg *consumer.Config) { cfg.BatchEffects = true }

// eachOnce fails unless every order of ids has exactly one notification
// and one inbox row.
func (b *bundle) eachOnce(t *testing.T, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		ev := evidence.EventIDFor(id)
		if n := count(t, b.DB, `SELECT COUNT(*) FROM notification WHERE event_id = ? AND order_id = ?`, ev, id); n != 1 {
			t.Errorf("notifications of %s = %d; want 1", ev, n)
		}
		if n := count(t, b.DB, `SELECT COUNT(*) FROM inbox WHERE event_id = ?`, ev); n != 1 {
			t.Errorf("inbox rows of %s = %d; want 1", ev, n)
		}
	}
}

// A batched consumer settles the records of a poll in one transaction
// and commits their offsets at once; every event is still one per
// record: 21 records (order 5 twice, as after a retried publish) make 21
// receives, 20 inbox_insert and effect, one inbox_reject, and fewer
// offset commits than records, the last one past the last record. Each
// effect event names its notification row.
func TestBatchEffects(t *testing.T) {
	b := setup(t)
	var ids []int64
	for id := int64(1); id <= 20; id++ {
		ids = append(ids, id)
	}
	b.produce(t, ids...)
	b.produce(t, 5)
	c := b.consumer(t, "consumer-1", batched)
	s, err := c.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.Received >= 21 && s.OffsetsCommitted >= 1 })
	if err != nil {
		t.Fatalf("PollUntil: %v (stats %+v)", err, s)
	}
	b.eachOnce(t, ids...)
	es := b.events(t)
	for kind, want := range map[evidence.Kind]int{evidence.KindReceive: 21, evidence.KindInboxInsert: 20,
		evidence.KindEffect: 20, evidence.KindInboxReject: 1} {
		if n := len(evidencetest.Of(es, kind)); n != want {
			t.Errorf("%s events = %d; want %d", kind, n, want)
		}
	}
	commits := evidencetest.Of(es, evidence.KindOffsetCommit)
	if len(commits) == 0 || len(commits) >= 21 || *commits[len(commits)-1].Offset != 21 {
		t.Fatalf("offset commits = %d, last %+v; want fewer than the 21 records (batched), the last at 21", len(commits), commits)
	}
	if rej := evidencetest.Of(es, evidence.KindInboxReject); *rej[0].Offset != 20 || rej[0].EventID != "e-5" {
		t.Errorf("inbox_reject = %+v; want the second e-5 at offset 20", rej[0])
	}
	for _, e := range evidencetest.Of(es, evidence.KindEffect) {
		if n := count(t, b.DB, `SELECT COUNT(*) FROM notification WHERE id = ? AND event_id = ?`, *e.NotificationID, e.EventID); n != 1 {
			t.Errorf("effect event %s names notification %d, which is not its row", e.EventID, *e.NotificationID)
		}
	}
	if st := c.Stats(); st.Received != 21 || st.Effects != 20 || st.InboxInserted != 20 || st.InboxRejected != 1 {
		t.Errorf("stats = %+v", st)
	}
}

// A batch whose transaction fails is settled record by record, so that
// the failure stays the failing record's: a trigger refuses order 3's
// notification; orders 1 and 2 are settled, order 3 is effect_rolled_back
// and replayed (with 4 and 5) once the trigger is gone; each order ends
// with one effect. A batch whose COMMIT goes unanswered (its connection
// killed) is commit_unknown for every record of it, and the replays make
// one effect each.
func TestBatchFailureIsolated(t *testing.T) {
	tests := []struct {
		name string
		kill bool
		kind evidence.Kind
	}{
		{"a record's statement fails", false, evidence.KindEffectRolledBack},
		{"the commit goes unanswered", true, evidence.KindCommitUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			inj := &fault.Injector{}
			if tt.kill {
				inj.ArmFunc(spec.EffectCommitKilled, 1, b.killOwnTx(t))
			} else if _, err := b.DB.ExecContext(t.Context(), `CREATE TRIGGER refuse BEFORE INSERT ON notification FOR EACH ROW
BEGIN IF NEW.event_id = 'e-3' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused'; END IF; END`); err != nil {
				t.Fatal(err)
			}
			b.produce(t, 1, 2, 3, 4, 5)
			c := b.consumer(t, "consumer-1", func(cfg *consumer.Config) { batched(cfg); cfg.Faults = inj })
			s, err := c.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.EffectsRolledBack+s.CommitsUnknown >= 1 })
			if err != nil {
				t.Fatalf("PollUntil: %v (stats %+v)", err, s)
			}
			if _, err := b.DB.ExecContext(t.Context(), `DROP TRIGGER IF EXISTS refuse`); err != nil {
				t.Fatal(err)
			}
			if s, err = c.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.Effects >= 5 }); err != nil {
				t.Fatalf("PollUntil after the failure: %v (stats %+v)", err, s)
			}
			b.eachOnce(t, 1, 2, 3, 4, 5)
			failed := evidencetest.Of(b.events(t), tt.kind)
			if len(failed) == 0 {
				t.Fatalf("no %s event", tt.kind)
			}
			if !tt.kill && (len(failed) != 1 || failed[0].EventID != "e-3") {
				t.Errorf("%s events = %+v; want one, for e-3 alone", tt.kind, failed)
			}
			if tt.kill && (len(failed) < 2 || len(failed) != c.Stats().CommitsUnknown) {
				t.Errorf("%d %s events, stats %+v; want one per record of the batch (at least 2)", len(failed), tt.kind, c.Stats())
			}
		})
	}
}
