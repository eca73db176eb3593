package consumer_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// killOwnTx kills, from another connection, the connection of the one
// open write transaction in db's database other than the asking one.
func (b *bundle) killOwnTx(t *testing.T) func() error {
	return func() error {
		ctx := context.WithoutCancel(t.Context())
		var id int64
		var err error
		for range 5 { // INNODB_TRX is a cache refreshed at most every 100 ms
			err = b.DB.QueryRowContext(ctx, `SELECT t.trx_mysql_thread_id FROM information_schema.INNODB_TRX t
  JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
 WHERE p.DB = DATABASE() AND t.trx_mysql_thread_id <> CONNECTION_ID()`).Scan(&id)
			if err == nil {
				break
			}
			time.Sleep(110 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("find the transaction: %w", err)
		}
		if _, err := b.DB.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil {
			return err
		}
		for range 200 {
			if count(t, b.DB, `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?`, id) == 0 {
				return nil
			}
			time.Sleep(5 * time.Millisecond)
		}
		return fmt.Errorf("connection %d still there after KILL", id)
	}
}

// An effect transaction that fails after its inbox insert (a trigger
// refuses the notification) rolls back as a whole: no inbox row, no
// offset commit, effect_rolled_back; its connection killed before the
// COMMIT, it is commit_unknown. Either way the next poll replays the
// record and makes its one effect. Under the planted EffectErrorSwallowed
// the offset is committed past the failed record and its effect is lost.
func TestEffectTransactionFails(t *testing.T) {
	tests := []struct {
		name      string
		kill      bool
		bug       plant.Bug
		kind      evidence.Kind
		wantNotif int
	}{
		{"trigger refuses the insert", false, plant.None, evidence.KindEffectRolledBack, 1},
		{"connection killed before commit", true, plant.None, evidence.KindCommitUnknown, 1},
		{"planted effect-error-swallowed", false, plant.EffectErrorSwallowed, evidence.KindEffectRolledBack, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			inj := &fault.Injector{}
			if tt.kill {
				inj.ArmFunc(spec.EffectCommitKilled, 1, b.killOwnTx(t))
			} else if _, err := b.DB.ExecContext(t.Context(), `CREATE TRIGGER refuse BEFORE INSERT ON notification FOR EACH ROW
BEGIN IF NEW.event_id = 'e-1' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused'; END IF; END`); err != nil {
				t.Fatal(err)
			}
			b.produce(t, 1, 2)
			c := b.consumer(t, "consumer-1", func(cfg *consumer.Config) { cfg.Faults = inj; cfg.Plant = tt.bug })
			s, err := c.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool {
				return s.EffectsRolledBack+s.CommitsUnknown >= 1
			})
			if err != nil {
				t.Fatalf("PollUntil: %v (stats %+v)", err, s)
			}
			if n := count(t, b.DB, `SELECT COUNT(*) FROM inbox WHERE event_id = 'e-1'`); n != 0 {
				t.Errorf("inbox rows of e-1 after the failure = %d; want 0 (one transaction)", n)
			}
			if _, err := b.DB.ExecContext(t.Context(), `DROP TRIGGER IF EXISTS refuse`); err != nil {
				t.Fatal(err)
			}
			if s, err = c.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.OffsetsCommitted >= 2 }); err != nil {
				t.Fatalf("PollUntil after the failure: %v (stats %+v)", err, s)
			}
			if n := count(t, b.DB, `SELECT COUNT(*) FROM notification WHERE event_id = 'e-1'`); n != tt.wantNotif {
				t.Errorf("notifications of e-1 = %d; want %d", n, tt.wantNotif)
			}
			es := b.events(t)
			failed := evidencetest.Of(es, tt.kind)
			if len(failed) != 1 || failed[0].EventID != "e-1" || *failed[0].Offset != 0 || failed[0].Err == "" {
				t.Fatalf("%s events = %+v; want one for e-1 at offset 0 with its error", tt.kind, failed)
			}
			var commits []int64
			for _, e := range evidencetest.Of(es, evidence.KindOffsetCommit) {
				commits = append(commits, *e.Offset)
			}
			if want := []int64{1, 2}; !slices.Equal(commits, want) {
				t.Errorf("offset commits = %v; want %v", commits, want)
			}
		})
	}
}
