package consumer_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

func TestParseIdentity(t *testing.T) {
	hdr := func(v string) []kgo.RecordHeader {
		return []kgo.RecordHeader{{Key: consumer.HeaderEventID, Value: []byte(v)}}
	}
	tests := []struct {
		name    string
		key     string
		headers []kgo.RecordHeader
		value   string
		want    consumer.Identity
		wantErr bool
	}{
		{"plain", "3", hdr("e-3"), `{"orderId":3,"sku":"a"}`, consumer.Identity{EventID: "e-3", OrderID: 3}, false},
		{"30 is not 3", "30", hdr("e-30"), `{"orderId":30}`, consumer.Identity{EventID: "e-30", OrderID: 30}, false},
		{"spaces, not normalised", "", hdr("e-3"), `{ "orderId" : 3 , "x": "\"orderId\":30" }`, consumer.Identity{EventID: "e-3", OrderID: 3}, false},
		{"nested decoy comes first", "", hdr("e-30"), `{"meta":{"orderId":3},"orderId":30}`, consumer.Identity{EventID: "e-30", OrderID: 30}, false},
		{"event id from payload", "", nil, `{"eventId":"e-5","orderId":5}`, consumer.Identity{EventID: "e-5", OrderID: 5}, false},
		{"header and payload agree", "", hdr("e-5"), `{"eventId":"e-5","orderId":5}`, consumer.Identity{EventID: "e-5", OrderID: 5}, false},
		{"header and payload disagree", "", hdr("e-5"), `{"eventId":"e-50","orderId":5}`, consumer.Identity{}, true},
		{"no event id", "", nil, `{"orderId":5}`, consumer.Identity{}, true},
		{"orderId as string", "", hdr("e-5"), `{"orderId":"5"}`, consumer.Identity{}, true},
		{"orderId fractional", "", hdr("e-5"), `{"orderId":5.5}`, consumer.Identity{}, true},
		{"no orderId", "", hdr("e-5"), `{"order":5}`, consumer.Identity{}, true},
		{"not an object", "", hdr("e-5"), `[5]`, consumer.Identity{}, true},
		{"trailing data", "", hdr("e-5"), `{"orderId":5} {}`, consumer.Identity{}, true},
		{"key disagrees", "3", hdr("e-30"), `{"orderId":30}`, consumer.Identity{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &kgo.Record{Headers: tt.headers, Value: []byte(tt.value)}
			if tt.key != "" {
				r.Key = []byte(tt.key)
			}
			got, err := consumer.ParseIdentity(r)
			if tt.wantErr {
				if !errors.Is(err, consumer.ErrBadRecord) {
					t.Fatalf("ParseIdentity(%s) error = %v; want ErrBadRecord", tt.value, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseIdentity(%s) = %+v, %v; want %+v", tt.value, got, err, tt.want)
			}
		})
	}
}

// bundle is one test's chain (infratest.Chain) and its consumer group.
type bundle struct {
	*infratest.Chain
	group string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return &bundle{Chain: infratest.NewChain(t, "consumer-test"), group: "g-" + infratest.RandomID()}
}

// produce publishes one record per order as the relay does: key = order
// id, event_id header, payload as the order service writes it.
func (b *bundle) produce(t *testing.T, orderIDs ...int64) {
	t.Helper()
	for _, id := range orderIDs {
		rec := &kgo.Record{
			Topic:   b.Topic,
			Key:     []byte(strconv.FormatInt(id, 10)),
			Value:   fmt.Appendf(nil, `{"orderId":%d,"sku":"sku-1","quantity":1,"amountCents":100}`, id),
			Headers: []kgo.RecordHeader{{Key: consumer.HeaderEventID, Value: []byte(evidence.EventIDFor(id))}},
		}
		if err := b.Producer.ProduceSync(t.Context(), rec).FirstErr(); err != nil {
			t.Fatalf("produce order %d: %v", id, err)
		}
	}
}

func (b *bundle) consumer(t *testing.T, member string, mod func(*consumer.Config)) *consumer.Consumer {
	t.Helper()
	cfg := consumer.Config{DB: b.DB, ClientOpts: b.Kafka.ClientOpts(), Topic: b.Topic, Group: b.group, Member: member, Log: b.Log}
	if mod != nil {
		mod(&cfg)
	}
	c, err := consumer.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("consumer.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func (b *bundle) events(t *testing.T) []evidence.Event {
	t.Helper()
	es, truncated := evidencetest.Read(t, bytes.NewReader(b.Buf.Bytes()))
	if truncated {
		t.Fatal("event log ends in a truncated line")
	}
	return es
}

func count(t *testing.T, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func deadline(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// One event delivered twice (the same record handled again) yields one
// inbox row, one notification and an inbox_reject; without the inbox
// (planted NoInboxDedupe) it yields two notifications.
func TestDuplicateDelivery(t *testing.T) {
	tests := []struct {
		name          string
		bug           plant.Bug
		wantInbox     int
		wantNotif     int
		wantRejects   int
		wantSecondRep bool
	}{
		{"inbox dedupe", plant.None, 1, 1, 1, true},
		{"planted no-inbox-dedupe", plant.NoInboxDedupe, 0, 2, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			b.produce(t, 7)
			c := b.consumer(t, "consumer-1", func(cfg *consumer.Config) { cfg.Plant = tt.bug })
			start := time.Now()
			s, err := c.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.Effects >= 1 })
			if err != nil {
				t.Fatalf("PollUntil: %v (stats %+v)", err, s)
			}
			t.Logf("first effect after %v (group join + fetch)", time.Since(start))
			recs := c.Handled()
			if len(recs) != 1 {
				t.Fatalf("handled %d records; want 1", len(recs))
			}
			out, err := c.Handle(t.Context(), recs[0])
			if err != nil {
				t.Fatalf("second Handle: %v", err)
			}
			if out.Rejected != tt.wantSecondRep || out.EventID != "e-7" || out.OrderID != 7 || !out.OffsetCommitted {
				t.Fatalf("second Handle = %+v; want replay=%v for e-7", out, tt.wantSecondRep)
			}
			if n := count(t, b.DB, `SELECT COUNT(*) FROM inbox WHERE event_id = 'e-7'`); n != tt.wantInbox {
				t.Errorf("inbox rows = %d; want %d", n, tt.wantInbox)
			}
			if n := count(t, b.DB, `SELECT COUNT(*) FROM notification WHERE event_id = 'e-7' AND order_id = 7`); n != tt.wantNotif {
				t.Errorf("notifications = %d; want %d", n, tt.wantNotif)
			}
			es := b.events(t)
			if n := len(evidencetest.Of(es, evidence.KindInboxReject)); n != tt.wantRejects {
				t.Errorf("inbox_reject events = %d; want %d", n, tt.wantRejects)
			}
			if n := len(evidencetest.Of(es, evidence.KindEffect)); n != tt.wantNotif {
				t.Errorf("effect events = %d; want %d", n, tt.wantNotif)
			}
			st := c.Stats()
			if st.Received != 2 || st.InboxRejected != tt.wantRejects || st.Effects != tt.wantNotif || st.OffsetsCommitted != 2 {
				t.Errorf("stats = %+v", st)
			}
			// The effect event names the notification row it committed.
			for _, e := range evidencetest.Of(es, evidence.KindEffect) {
				if n := count(t, b.DB, `SELECT COUNT(*) FROM notification WHERE id = ? AND event_id = ?`, *e.NotificationID, e.EventID); n != 1 {
					t.Errorf("effect event %+v names no notification row", e)
				}
			}
		})
	}
}

// A member that crashed after its effect and before its offset commit
// leaves the offset uncommitted: the next member of the group sees the
// record again and the inbox rejects it, so the effect stays single. Under
// the planted OffsetBeforeEffect the crash falls between the offset commit
// and the effect: the next member starts after the record and the effect is
// lost.
func TestRestartWithoutOffsetCommit(t *testing.T) {
	tests := []struct {
		name        string
		bug         plant.Bug
		wantNotifE1 int
		wantReplays int // receive events of offset 0 by the second member
		wantRecv2   int // records the second member receives
	}{
		{"effect before offset", plant.None, 1, 1, 2},
		{"planted offset-before-effect", plant.OffsetBeforeEffect, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			b.produce(t, 1, 2)
			inj := &fault.Injector{}
			inj.Arm(spec.AfterEffectBeforeOffsetCommit, fault.Crash, 1)
			c1 := b.consumer(t, "consumer-1", func(cfg *consumer.Config) { cfg.Faults = inj; cfg.Plant = tt.bug })
			_, err := c1.PollUntil(deadline(t, 15*time.Second), func(consumer.Stats) bool { return false })
			if !errors.Is(err, fault.ErrCrash) {
				t.Fatalf("first member: %v; want a simulated crash", err)
			}
			c1.Close()

			c2 := b.consumer(t, "consumer-2", func(cfg *consumer.Config) { cfg.Plant = tt.bug })
			start := time.Now()
			s, err := c2.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.Received >= tt.wantRecv2 })
			if err != nil {
				t.Fatalf("second member: %v (stats %+v)", err, s)
			}
			t.Logf("second member caught up after %v", time.Since(start))

			if n := count(t, b.DB, `SELECT COUNT(*) FROM notification WHERE event_id = 'e-1'`); n != tt.wantNotifE1 {
				t.Errorf("notifications for e-1 = %d; want %d", n, tt.wantNotifE1)
			}
			if n := count(t, b.DB, `SELECT COUNT(*) FROM notification WHERE event_id = 'e-2'`); n != 1 {
				t.Errorf("notifications for e-2 = %d; want 1", n)
			}
			es := b.events(t)
			replays := 0
			for _, e := range evidencetest.Of(es, evidence.KindReceive) {
				if e.Actor == "consumer-2" && *e.Offset == 0 {
					replays++
				}
			}
			if replays != tt.wantReplays {
				t.Errorf("second member received offset 0 %d times; want %d", replays, tt.wantReplays)
			}
			if tt.bug == plant.None {
				rej := evidencetest.Of(es, evidence.KindInboxReject)
				if len(rej) != 1 || rej[0].EventID != "e-1" || rej[0].Actor != "consumer-2" {
					t.Errorf("inbox_reject events = %+v; want one for e-1 by consumer-2", rej)
				}
			}
			// The last committed offset is 2 (both records done).
			var last int64 = -1
			for _, e := range evidencetest.Of(es, evidence.KindOffsetCommit) {
				last = *e.Offset
			}
			if last != 2 {
				t.Errorf("last offset_commit = %d; want 2", last)
			}
		})
	}
}

// Orders 3 and 30 are told apart by parsing, not by substring.
func TestPayloadIdentity(t *testing.T) {
	b := setup(t)
	b.produce(t, 3, 30)
	c := b.consumer(t, "consumer-1", nil)
	if s, err := c.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.Effects >= 2 }); err != nil {
		t.Fatalf("PollUntil: %v (stats %+v)", err, s)
	}
	rows, err := b.DB.QueryContext(t.Context(), `SELECT event_id, order_id FROM notification ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int64{}
	for rows.Next() {
		var e string
		var o int64
		if err := rows.Scan(&e, &o); err != nil {
			t.Fatal(err)
		}
		got[e] = o
	}
	if len(got) != 2 || got["e-3"] != 3 || got["e-30"] != 30 {
		t.Fatalf("notifications = %v; want e-3→3, e-30→30", got)
	}
	for _, e := range evidencetest.Of(b.events(t), evidence.KindReceive) {
		if evidence.EventIDFor(*e.OrderID) != e.EventID {
			t.Errorf("receive %s carries order %d", e.EventID, *e.OrderID)
		}
	}
}

// A record without identity is refused loudly: no effect, no offset commit.
func TestBadRecordStops(t *testing.T) {
	b := setup(t)
	if err := b.Producer.ProduceSync(t.Context(), &kgo.Record{Topic: b.Topic, Value: []byte(`{"orderId":1}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c := b.consumer(t, "consumer-1", nil)
	_, err := c.PollUntil(deadline(t, 15*time.Second), func(consumer.Stats) bool { return false })
	if !errors.Is(err, consumer.ErrBadRecord) {
		t.Fatalf("PollUntil = %v; want ErrBadRecord", err)
	}
	if s := c.Stats(); s != (consumer.Stats{Owned: 1}) {
		t.Errorf("stats = %+v; want nothing done, the topic's one partition owned", s)
	}
	if n := count(t, b.DB, `SELECT COUNT(*) FROM notification`); n != 0 {
		t.Errorf("notifications = %d; want 0", n)
	}
	if es := b.events(t); len(es) != 2 || es[0].Kind != evidence.KindGroupJoin || es[1].Kind != evidence.KindPartitionAssigned {
		t.Errorf("events = %+v; want only the join and the partition's assignment", es)
	}
}

func TestConfigValidate(t *testing.T) {
	db, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tests := []struct {
		name string
		cfg  consumer.Config
	}{
		{"no db", consumer.Config{Topic: "t"}},
		{"no topic", consumer.Config{DB: db}},
		{"bad member", consumer.Config{DB: db, Topic: "t", Member: "a b"}},
		{"long name", consumer.Config{DB: db, Topic: "t", Name: string(bytes.Repeat([]byte("n"), 65))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := consumer.New(t.Context(), tt.cfg); err == nil {
				t.Fatalf("New(%s) succeeded; want an error", tt.name)
			}
		})
	}
}

// The relay and the consumer together, each in its Run loop: every intent
// ends SENT with exactly one notification, and both loops stop cleanly when
// their context ends.
func TestRunChainEndToEnd(t *testing.T) {
	b := setup(t)
	const n = 5
	for id := int64(1); id <= n; id++ {
		payload := fmt.Sprintf(`{"orderId":%d,"sku":"sku-1","quantity":1,"amountCents":100}`, id)
		if _, err := b.DB.ExecContext(t.Context(),
			`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload) VALUES (?, ?, 1, ?)`,
			evidence.EventIDFor(id), id, payload); err != nil {
			t.Fatal(err)
		}
	}
	r, err := relay.New(relay.Config{DB: b.DB, Client: b.Producer, Topic: b.Topic, Log: b.Log, Actor: "relay-a", Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := b.consumer(t, "consumer-1", nil)

	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 2)
	go func() { errs <- r.Run(ctx, 20*time.Millisecond) }()
	go func() { errs <- c.Run(ctx) }()

	end := time.Now().Add(15 * time.Second)
	for {
		sent := count(t, b.DB, `SELECT COUNT(*) FROM outbox WHERE state = 'SENT'`)
		notes := count(t, b.DB, `SELECT COUNT(*) FROM notification`)
		if sent == n && notes == n {
			break
		}
		if time.Now().After(end) {
			cancel()
			t.Fatalf("after 15s: %d SENT, %d notifications; want %d each", sent, notes, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Run returned %v; want nil after cancel", err)
		}
	}
	if d := count(t, b.DB, `SELECT COUNT(*) FROM (SELECT event_id FROM notification GROUP BY event_id HAVING COUNT(*) > 1) d`); d != 0 {
		t.Errorf("%d events with more than one notification", d)
	}
	es := b.events(t)
	if got := len(evidencetest.Of(es, evidence.KindMark)); got != n {
		t.Errorf("mark events = %d; want %d", got, n)
	}
}

// A poll whose time runs out inside its batch (here after the first
// record's effect, before its offset commit) leaves the member able to go
// on: polled again, it handles the records of the batch it did not settle
// (the first again, absorbed by the inbox), and commits the end. Without
// the rewind the client's position was past them: the next poll found
// nothing, and the records were never settled.
// TestPollInterruptedKeepsCommits: a poll whose time runs out after it
// committed the offsets of its batch's first records rewinds only to the
// first record it did not commit past; going back to the batch's first
// would replay settled records and commit an earlier offset after a later
// one (offset-backwards, found by the call sweep).
func TestPollInterruptedKeepsCommits(t *testing.T) {
	b := setup(t)
	b.produce(t, 1, 2, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	inj := &fault.Injector{}
	hits := 0
	inj.ArmFunc(spec.AfterEffectBeforeOffsetCommit, 3, func() error {
		if hits++; hits == 3 { // the third record's, after two offsets were committed
			cancel()
			return ctx.Err()
		}
		return nil
	})
	c := b.consumer(t, "consumer-1", func(cfg *consumer.Config) { cfg.Faults = inj })
	for ctx.Err() == nil {
		if _, err := c.PollOnce(ctx); err != nil && ctx.Err() == nil {
			t.Fatalf("first poll: %v", err)
		}
	}
	if hits < 3 {
		t.Fatalf("the poll ended before the third record (%d hits): the three records were not one batch", hits)
	}
	if s, err := c.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.Effects >= 3 && s.OffsetsCommitted >= 3 }); err != nil {
		t.Fatalf("polled again: %v (stats %+v)", err, s)
	}
	var offsets []int64
	for _, e := range evidencetest.Of(b.events(t), evidence.KindOffsetCommit) {
		offsets = append(offsets, *e.Offset)
	}
	if !slices.IsSorted(offsets) || len(offsets) == 0 || offsets[len(offsets)-1] != 3 {
		t.Errorf("offset_commit offsets %v; want them never going back, ending at 3", offsets)
	}
	for id := 1; id <= 3; id++ {
		if n := count(t, b.DB, `SELECT COUNT(*) FROM notification WHERE event_id = ?`, evidence.EventIDFor(int64(id))); n != 1 {
			t.Errorf("notifications of e-%d = %d; want 1", id, n)
		}
	}
}

func TestPollInterruptedRewinds(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			b := setup(t)
			b.produce(t, 1, 2, 3)
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			inj := &fault.Injector{}
			inj.ArmFunc(spec.AfterEffectBeforeOffsetCommit, 1, func() error { cancel(); return ctx.Err() })
			c := b.consumer(t, "consumer-1", func(cfg *consumer.Config) { cfg.Faults = inj; cfg.BatchEffects = batch })
			for ctx.Err() == nil {
				if _, err := c.PollOnce(ctx); err != nil && ctx.Err() == nil {
					t.Fatalf("first poll: %v", err)
				}
			}
			s, err := c.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.Effects >= 3 && s.OffsetsCommitted >= 1 })
			if err != nil {
				t.Fatalf("polled again: %v (stats %+v)", err, s)
			}
			for id := 1; id <= 3; id++ {
				if n := count(t, b.DB, `SELECT COUNT(*) FROM notification WHERE event_id = ?`, evidence.EventIDFor(int64(id))); n != 1 {
					t.Errorf("notifications of e-%d = %d; want 1", id, n)
				}
			}
			var last int64 = -1
			for _, e := range evidencetest.Of(b.events(t), evidence.KindOffsetCommit) {
				last = max(last, *e.Offset)
			}
			if last != 3 {
				t.Errorf("last offset_commit = %d; want 3", last)
			}
		})
	}
}
