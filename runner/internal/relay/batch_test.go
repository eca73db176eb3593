package relay_test

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// A batch mark counts its hits row by row: of four claims of relay A (v1),
// the first is still A's and hits; the second A took over itself (v2, the
// same claim_id), so v1 is stale; the third relay B took over; the fourth
// A's own single mark already set to SENT. The planted MarkCASClaimIDOnly
// also hits the self-taken-over row; the planted MarkWithoutToken hits
// every row, B's and the one already SENT too (its sent_at changes, as
// with the single mark of that plant).
func TestMarkBatchCountsEachRow(t *testing.T) {
	tests := []struct {
		bug  plant.Bug
		want []int64
	}{
		{plant.None, []int64{1, 0, 0, 0}},
		{plant.MarkCASClaimIDOnly, []int64{1, 1, 0, 0}},
		{plant.MarkWithoutToken, []int64{1, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(string(tt.bug), func(t *testing.T) {
			b := setup(t)
			ctx := t.Context()
			insertIntents(t, b.DB, 1, 2, 3, 4)
			a := b.relay(t, "relay-a", func(c *relay.Config) { c.Plant = tt.bug })
			rb := b.relay(t, "relay-b", nil)
			v1, err := a.Claim(ctx, 4)
			if err != nil || len(v1) != 4 {
				t.Fatalf("claim = %d, %v; want 4", len(v1), err)
			}
			expire(t, b.DB, "e-2", "e-3")
			if got, err := a.Claim(ctx, 1); err != nil || len(got) != 1 || got[0].EventID != "e-2" {
				t.Fatalf("self-takeover of e-2 = %+v, %v", got, err)
			}
			if got, err := rb.Claim(ctx, 1); err != nil || len(got) != 1 || got[0].EventID != "e-3" {
				t.Fatalf("takeover of e-3 by B = %+v, %v", got, err)
			}
			if n, err := a.Mark(ctx, v1[3]); err != nil || n != 1 {
				t.Fatalf("single mark of e-4 = %d, %v", n, err)
			}
			b.Buf.Reset()
			rows, err := a.MarkBatch(ctx, v1)
			if err != nil {
				t.Fatalf("MarkBatch: %v", err)
			}
			if !slices.Equal(rows, tt.want) {
				t.Fatalf("MarkBatch rows = %v; want %v", rows, tt.want)
			}
			marks := evidencetest.Of(b.events(t), evidence.KindMark)
			if len(marks) != 4 {
				t.Fatalf("mark events = %d; want one per claim", len(marks))
			}
			for i, m := range marks {
				if m.EventID != v1[i].EventID || *m.ClaimVersion != 1 || m.ClaimID != a.ClaimID() || *m.Rows != tt.want[i] {
					t.Errorf("mark event %d = %s v%d/%s rows %d; want %s v1/%s rows %d",
						i, m.EventID, *m.ClaimVersion, m.ClaimID, *m.Rows, v1[i].EventID, a.ClaimID(), tt.want[i])
				}
				if st := readRow(t, b.DB, m.EventID).State; (tt.want[i] == 1) != (st == evidence.StateSent) && i < 3 {
					t.Errorf("%s is %s after a mark of %d rows", m.EventID, st, tt.want[i])
				}
			}
		})
	}
}

func expire(t *testing.T, db *sql.DB, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if n, err := relay.ExpireLease(t.Context(), db, id); err != nil || n != 1 {
			t.Fatalf("ExpireLease(%s) = %d, %v", id, n, err)
		}
	}
}

// sessionCounter reads a session status counter of the only connection of
// db (the test limits the pool to one).
func sessionCounter(t *testing.T, db *sql.DB, name string) int64 {
	t.Helper()
	var n string
	var v int64
	if err := db.QueryRowContext(t.Context(), "SHOW SESSION STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A round of 40 intents costs the database a fixed number of statements:
// two UPDATEs (the claim, the mark), whatever the batch size, and every
// intent is claimed, published, marked, each with its own event.
func TestRunOnceStatementsPerBatch(t *testing.T) {
	const n = 40
	b := setup(t)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	insertIntents(t, b.DB, ids...)
	b.DB.SetMaxOpenConns(1)
	r := b.relay(t, "relay-a", func(c *relay.Config) { c.Batch = n })
	updates := sessionCounter(t, b.DB, "Com_update")
	res, err := r.RunOnce(t.Context())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	if len(res.Claimed) != n || res.Published != n || res.Marked != n {
		t.Fatalf("RunOnce = %d claimed, %d published, %d marked; want %d each", len(res.Claimed), res.Published, res.Marked, n)
	}
	if got := sessionCounter(t, b.DB, "Com_update") - updates; got != 2 {
		t.Errorf("UPDATE statements for a round of %d = %d; want 2 (one claim, one mark)", n, got)
	}
	es := b.events(t)
	for _, k := range []evidence.Kind{evidence.KindClaim, evidence.KindPublish, evidence.KindMark} {
		if got := len(evidencetest.Of(es, k)); got != n {
			t.Errorf("%s events = %d; want %d", k, got, n)
		}
	}
	if got := b.endOffset(t); got != n {
		t.Errorf("records = %d; want %d", got, n)
	}
	var sent int
	if err := b.DB.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM outbox WHERE state = 'SENT' AND claim_version = 1").Scan(&sent); err != nil || sent != n {
		t.Errorf("SENT v1 rows = %d, %v; want %d", sent, err, n)
	}
}

// In a batch whose one record the client refuses (larger than a record
// batch may be), the others are acknowledged and marked; the refused one
// is a publish event with its error and stays CLAIMED, unmarked.
func TestRunOnceBatchWithARefusedRecord(t *testing.T) {
	b := setup(t)
	insertIntents(t, b.DB, 1, 3)
	big := fmt.Sprintf(`{"eventId":"e-2","orderId":2,"pad":%q}`, strings.Repeat("x", 4000))
	if _, err := b.DB.ExecContext(t.Context(),
		`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload) VALUES ('e-2', 2, 1, ?)`, big); err != nil {
		t.Fatal(err)
	}
	cfg := relay.Config{DB: b.DB, Topic: b.Topic, Log: b.Log, Actor: "relay-a", ClaimID: "claim-relay-a"}
	cl, err := kgo.NewClient(b.Kafka.ClientOpts(append(relay.ProducerOpts(0), kgo.ProducerBatchMaxBytes(1024))...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	cfg.Client = cl
	r, err := relay.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.RunOnce(t.Context())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	if len(res.Claimed) != 3 || res.Published != 2 || res.PublishFailed != 1 || res.Marked != 2 {
		t.Fatalf("RunOnce = %+v; want 3 claimed, 2 published and marked, 1 refused", res)
	}
	for id, want := range map[string]string{"e-1": evidence.StateSent, "e-2": evidence.StateClaimed, "e-3": evidence.StateSent} {
		if got := readRow(t, b.DB, id).State; got != want {
			t.Errorf("%s state = %s; want %s", id, got, want)
		}
	}
	es := b.events(t)
	for _, m := range evidencetest.Of(es, evidence.KindMark) {
		if m.EventID == "e-2" {
			t.Errorf("the refused e-2 was marked: %+v", m)
		}
	}
	for _, p := range evidencetest.Of(es, evidence.KindPublish) {
		if (p.EventID == "e-2") != (p.Err != "") {
			t.Errorf("publish event %s err %q; want an error for e-2 only", p.EventID, p.Err)
		}
	}
}

// With a buffered log the relay flushes before each fault point, so that
// a process killed there has written every event before it: after a
// crash at after-publish-before-mark the log holds the claims and the
// publishes; the fault event, emitted after the point, is still buffered.
func TestRunOnceFlushesBeforeFaultPoint(t *testing.T) {
	b := setup(t)
	insertIntents(t, b.DB, 1, 2)
	if err := b.Log.Buffer(1 << 20); err != nil {
		t.Fatal(err)
	}
	inj := &fault.Injector{}
	inj.Arm(spec.AfterPublishBeforeMark, fault.Crash, 1)
	r := b.relay(t, "relay-a", func(c *relay.Config) { c.Faults = inj })
	if _, err := r.RunOnce(t.Context()); !errors.Is(err, fault.ErrCrash) {
		t.Fatalf("RunOnce = %v; want a crash", err)
	}
	es := b.events(t)
	if len(evidencetest.Of(es, evidence.KindClaim)) != 2 || len(evidencetest.Of(es, evidence.KindPublish)) != 2 ||
		len(evidencetest.Of(es, evidence.KindFault)) != 0 {
		t.Fatalf("written before the crash point: %d events %v; want 2 claims and 2 publishes, no fault yet", len(es), kinds(es))
	}
	if err := b.Log.Flush(); err != nil {
		t.Fatal(err)
	}
	if fs := evidencetest.Of(b.events(t), evidence.KindFault); len(fs) != 1 {
		t.Fatalf("fault events after Flush = %d; want 1", len(fs))
	}
}

func kinds(es []evidence.Event) []evidence.Kind {
	var out []evidence.Kind
	for _, e := range es {
		out = append(out, e.Kind)
	}
	return out
}
