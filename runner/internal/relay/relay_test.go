package relay_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// bundle is one test's chain (infratest.Chain).
type bundle struct{ *infratest.Chain }

func setup(t *testing.T) *bundle {
	t.Helper()
	return &bundle{infratest.NewChain(t, "relay-test")}
}

// relay returns a relay named actor, its configuration changed by mod,
// with its own producer (built as the runner builds it, with
// relay.ProducerOpts).
func (b *bundle) relay(t *testing.T, actor string, mod func(*relay.Config)) *relay.Relay {
	t.Helper()
	cfg := relay.Config{DB: b.DB, Topic: b.Topic, Log: b.Log, Actor: actor, ClaimID: "claim-" + actor}
	if mod != nil {
		mod(&cfg)
	}
	cl, err := kgo.NewClient(b.Kafka.ClientOpts(relay.ProducerOpts(cfg.PublishTimeout)...)...)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	t.Cleanup(cl.Close)
	cfg.Client = cl
	r, err := relay.New(cfg)
	if err != nil {
		t.Fatalf("relay.New: %v", err)
	}
	return r
}

func (b *bundle) events(t *testing.T) []evidence.Event {
	t.Helper()
	es, truncated := evidencetest.Read(t, bytes.NewReader(b.Buf.Bytes()))
	if truncated {
		t.Fatal("event log ends in a truncated line")
	}
	return es
}

// insertIntents writes PENDING intents for the given orders directly, as the
// order transaction would.
func insertIntents(t *testing.T, db *sql.DB, orderIDs ...int64) {
	t.Helper()
	for _, id := range orderIDs {
		payload := fmt.Sprintf(`{"eventId":%q,"orderId":%d,"sku":"sku-1","quantity":1}`, evidence.EventIDFor(id), id)
		if _, err := db.ExecContext(context.Background(),
			`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload) VALUES (?, ?, 1, ?)`,
			evidence.EventIDFor(id), id, payload); err != nil {
			t.Fatalf("insert intent %d: %v", id, err)
		}
	}
}

type row struct {
	State        string
	ClaimVersion int64
	ClaimID      sql.NullString
	Sent         bool
}

func readRow(t *testing.T, db *sql.DB, eventID string) row {
	t.Helper()
	var r row
	var sentAt sql.NullTime
	if err := db.QueryRowContext(context.Background(),
		`SELECT state, claim_version, claim_id, sent_at FROM outbox WHERE event_id = ?`, eventID,
	).Scan(&r.State, &r.ClaimVersion, &r.ClaimID, &sentAt); err != nil {
		t.Fatalf("read outbox row %s: %v", eventID, err)
	}
	r.Sent = sentAt.Valid
	return r
}

// endOffset returns the number of records in partition 0 of the topic.
func (b *bundle) endOffset(t *testing.T) int64 {
	t.Helper()
	offs, err := kadm.NewClient(b.Producer).ListEndOffsets(t.Context(), b.Topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	o, ok := offs.Lookup(b.Topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s/0: %v %v", b.Topic, ok, o.Err)
	}
	return o.Offset
}

func TestConfigValidate(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	db, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	good := relay.Config{DB: db, Client: cl, Topic: "t"}
	tests := []struct {
		name string
		mod  func(*relay.Config)
		ok   bool
	}{
		{"defaults", func(*relay.Config) {}, true},
		{"no db", func(c *relay.Config) { c.DB = nil }, false},
		{"no client", func(c *relay.Config) { c.Client = nil }, false},
		{"no topic", func(c *relay.Config) { c.Topic = "" }, false},
		{"long claim id", func(c *relay.Config) { c.ClaimID = string(bytes.Repeat([]byte("x"), 65)) }, false},
		{"negative lease", func(c *relay.Config) { c.Lease = -time.Second }, false},
		{"negative batch", func(c *relay.Config) { c.Batch = -1 }, false},
		{"bad actor", func(c *relay.Config) { c.Actor = "relay a" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.mod(&cfg)
			_, err := relay.New(cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("New(%s) error = %v; want ok=%v", tt.name, err, tt.ok)
			}
		})
	}
	a, _ := relay.New(good)
	b, _ := relay.New(good)
	if a.ClaimID() == b.ClaimID() || len(a.ClaimID()) == 0 {
		t.Errorf("default claim ids %q and %q are not unique", a.ClaimID(), b.ClaimID())
	}
}

// Two relays claiming the same 50 intents concurrently never hold the same
// row: every intent is claimed exactly once (leases are live throughout),
// and the database agrees with the claim events.
func TestConcurrentClaimsNeverOverlap(t *testing.T) {
	b := setup(t)
	const n = 50
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	insertIntents(t, b.DB, ids...)
	relays := []*relay.Relay{
		b.relay(t, "relay-a", func(c *relay.Config) { c.Batch = 3 }),
		b.relay(t, "relay-b", func(c *relay.Config) { c.Batch = 3 }),
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, len(relays))
	for _, r := range relays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				cs, err := r.Claim(ctx, 0)
				if err != nil {
					errs <- err
					return
				}
				if len(cs) > 0 {
					continue
				}
				// SKIP LOCKED may return nothing while the other relay
				// holds the remaining rows: stop only when none is due.
				var pending int
				if err := b.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox WHERE state = 'PENDING'`).Scan(&pending); err != nil {
					errs <- err
					return
				}
				if pending == 0 {
					return
				}
			}
			errs <- errors.New("claim loop did not finish")
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	claims := evidencetest.Of(b.events(t), evidence.KindClaim)
	owner := map[string]string{}
	perRelay := map[string]int{}
	for _, c := range claims {
		if prev, dup := owner[c.EventID]; dup {
			t.Errorf("%s claimed twice: by %s and by %s", c.EventID, prev, c.ClaimID)
		}
		owner[c.EventID] = c.ClaimID
		perRelay[c.Actor]++
		if c.StateBefore != evidence.StatePending || *c.ClaimVersion != 1 {
			t.Errorf("claim of %s: state_before %s claim_version %d; want PENDING 1", c.EventID, c.StateBefore, *c.ClaimVersion)
		}
	}
	if len(owner) != n {
		t.Fatalf("%d distinct intents claimed; want %d", len(owner), n)
	}
	t.Logf("claims per relay: %v", perRelay)
	for _, id := range ids {
		e := evidence.EventIDFor(id)
		r := readRow(t, b.DB, e)
		if r.State != evidence.StateClaimed || r.ClaimVersion != 1 || r.ClaimID.String != owner[e] {
			t.Errorf("row %s = %+v; want CLAIMED v1 by %s", e, r, owner[e])
		}
	}
}

// A relay whose lease expired loses its row: another relay takes it over
// with claim_version + 1, the stale mark hits 0 rows and leaves the row as
// the newer claim left it. With the planted bug MarkWithoutToken the stale
// mark hits the row.
func TestStaleMarkAfterTakeover(t *testing.T) {
	tests := []struct {
		name          string
		bug           plant.Bug
		wantStaleRows int64
	}{
		{"token cas", plant.None, 0},
		{"planted mark-without-token", plant.MarkWithoutToken, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			ctx := t.Context()
			insertIntents(t, b.DB, 7)
			a := b.relay(t, "relay-a", func(c *relay.Config) { c.Plant = tt.bug })
			rb := b.relay(t, "relay-b", func(c *relay.Config) { c.Plant = tt.bug })

			ca, err := a.Claim(ctx, 0)
			if err != nil || len(ca) != 1 {
				t.Fatalf("relay A claim = %v, %v; want 1 row", ca, err)
			}
			if ca[0].ClaimVersion != 1 || ca[0].StateBefore != evidence.StatePending || ca[0].OrderID != 7 {
				t.Fatalf("relay A claim = %+v", ca[0])
			}
			if !ca[0].LeaseUntil.After(time.Now().Add(20*time.Second)) || ca[0].LeaseUntil.After(time.Now().Add(40*time.Second)) {
				t.Errorf("lease_until %v is not about 30s ahead", ca[0].LeaseUntil)
			}
			if cb, err := rb.Claim(ctx, 0); err != nil || len(cb) != 0 {
				t.Fatalf("relay B claimed %d rows under A's live lease (err %v); want 0", len(cb), err)
			}

			if n, err := relay.ExpireLease(ctx, b.DB, "e-7"); err != nil || n != 1 {
				t.Fatalf("ExpireLease = %d, %v; want 1", n, err)
			}
			cb, err := rb.Claim(ctx, 0)
			if err != nil || len(cb) != 1 {
				t.Fatalf("relay B takeover = %v, %v; want 1 row", cb, err)
			}
			if cb[0].ClaimVersion != 2 || cb[0].StateBefore != evidence.StateClaimed || cb[0].ClaimID != rb.ClaimID() {
				t.Fatalf("takeover claim = %+v; want claim_version 2 from CLAIMED by %s", cb[0], rb.ClaimID())
			}

			stale, err := a.Mark(ctx, ca[0])
			if err != nil {
				t.Fatalf("stale mark: %v", err)
			}
			if stale != tt.wantStaleRows {
				t.Fatalf("stale mark rows = %d; want %d", stale, tt.wantStaleRows)
			}
			r := readRow(t, b.DB, "e-7")
			if tt.bug == plant.None {
				if r.State != evidence.StateClaimed || r.ClaimVersion != 2 || r.ClaimID.String != rb.ClaimID() || r.Sent {
					t.Fatalf("after stale mark row = %+v; want CLAIMED v2 by %s, not sent", r, rb.ClaimID())
				}
				fresh, err := rb.Mark(ctx, cb[0])
				if err != nil || fresh != 1 {
					t.Fatalf("fresh mark = %d, %v; want 1", fresh, err)
				}
				if r := readRow(t, b.DB, "e-7"); r.State != evidence.StateSent || !r.Sent || r.ClaimVersion != 2 {
					t.Fatalf("after fresh mark row = %+v; want SENT v2", r)
				}
				// A mark of an already SENT row with the right token also
				// hits nothing: SENT is final.
				if again, err := rb.Mark(ctx, cb[0]); err != nil || again != 0 {
					t.Fatalf("second mark = %d, %v; want 0", again, err)
				}
			} else if r.State != evidence.StateSent {
				t.Fatalf("planted stale mark left state %s; want SENT (the bug marks with a dead token)", r.State)
			}

			marks := evidencetest.Of(b.events(t), evidence.KindMark)
			if len(marks) == 0 || *marks[0].Rows != tt.wantStaleRows || *marks[0].ClaimVersion != 1 || marks[0].ClaimID != a.ClaimID() {
				t.Fatalf("first mark event = %+v; want rows %d for claim_version 1 of %s", marks, tt.wantStaleRows, a.ClaimID())
			}
		})
	}
}

// The normal chain: claim, publish (key = aggregate id, token in the
// headers), mark 1 row, SENT; events in that order.
func TestRunOnceNormalChain(t *testing.T) {
	b := setup(t)
	ctx := t.Context()
	insertIntents(t, b.DB, 42)
	r := b.relay(t, "relay-a", nil)
	res, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	if len(res.Claimed) != 1 || res.Published != 1 || res.Marked != 1 || res.LeaseLost != 0 || res.Crashed != nil {
		t.Fatalf("RunOnce = %+v; want 1 claimed, published, marked", res)
	}
	if row := readRow(t, b.DB, "e-42"); row.State != evidence.StateSent || row.ClaimVersion != 1 || !row.Sent {
		t.Fatalf("row = %+v; want SENT v1", row)
	}

	cons, err := kgo.NewClient(b.Kafka.ClientOpts(
		kgo.ConsumeTopics(b.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fs := cons.PollFetches(pctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("poll: %v", err)
	}
	recs := fs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records on the topic; want 1", len(recs))
	}
	rec := recs[0]
	if string(rec.Key) != "42" {
		t.Errorf("key = %q; want %q", rec.Key, "42")
	}
	if !bytes.Equal(rec.Value, res.Claimed[0].Payload) {
		t.Errorf("value = %s; want the outbox payload %s", rec.Value, res.Claimed[0].Payload)
	}
	hdr := map[string]string{}
	for _, h := range rec.Headers {
		hdr[h.Key] = string(h.Value)
	}
	if hdr[relay.HeaderEventID] != "e-42" || hdr[relay.HeaderClaimVersion] != "1" || hdr[relay.HeaderClaimID] != r.ClaimID() {
		t.Errorf("headers = %v", hdr)
	}

	var kinds []evidence.Kind
	es := b.events(t)
	for _, e := range es {
		kinds = append(kinds, e.Kind)
	}
	want := []evidence.Kind{evidence.KindClaim, evidence.KindPublish, evidence.KindMark}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("event kinds = %v; want %v", kinds, want)
	}
	if p := es[1]; *p.Offset != rec.Offset || *p.Partition != rec.Partition || p.Topic != b.Topic {
		t.Errorf("publish event = %+v; record at %d/%d", p, rec.Partition, rec.Offset)
	}
	if *es[2].Rows != 1 {
		t.Errorf("mark rows = %d; want 1", *es[2].Rows)
	}
}

// Simulated crashes stop the round where they are armed; the planted bug
// MarkBeforePublish turns a crash before publish into an intent SENT and
// never published.
func TestRunOnceCrash(t *testing.T) {
	tests := []struct {
		name        string
		bug         plant.Bug
		point       fault.Point
		wantState   string
		wantRecords int64
		wantMarks   int
	}{
		// The batch was published as a whole before the first mark: both
		// records are on the topic, neither row is marked.
		{"after publish before mark", plant.None, spec.AfterPublishBeforeMark, evidence.StateClaimed, 2, 0},
		{"after claim before publish", plant.None, spec.AfterClaimBeforePublish, evidence.StateClaimed, 0, 0},
		// The batch was marked as a whole before the first publish.
		{"planted mark-before-publish", plant.MarkBeforePublish, spec.AfterClaimBeforePublish, evidence.StateSent, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			ctx := t.Context()
			insertIntents(t, b.DB, 1, 2)
			inj := &fault.Injector{}
			inj.Arm(tt.point, fault.Crash, 1)
			r := b.relay(t, "relay-a", func(c *relay.Config) { c.Faults = inj; c.Plant = tt.bug })
			res, err := r.RunOnce(ctx)
			if !errors.Is(err, fault.ErrCrash) {
				t.Fatalf("RunOnce error = %v; want ErrCrash", err)
			}
			if res.Crashed == nil || res.Crashed.EventID != "e-1" || len(res.Claimed) != 2 {
				t.Fatalf("RunOnce = %+v; want a crash on e-1 with 2 claimed", res)
			}
			// The crash stopped the round: no mark after it.
			for _, id := range []string{"e-1", "e-2"} {
				if got := readRow(t, b.DB, id).State; got != tt.wantState {
					t.Errorf("%s state = %s; want %s", id, got, tt.wantState)
				}
			}
			if got := b.endOffset(t); got != tt.wantRecords {
				t.Errorf("records on the topic = %d; want %d", got, tt.wantRecords)
			}
			es := b.events(t)
			if got := len(evidencetest.Of(es, evidence.KindMark)); got != tt.wantMarks {
				t.Errorf("mark events = %d; want %d", got, tt.wantMarks)
			}
			if fs := evidencetest.Of(es, evidence.KindFault); len(fs) != 1 || fs[0].Point != string(tt.point) {
				t.Errorf("fault events = %+v; want one at %s", fs, tt.point)
			}
		})
	}
}

// Under the planted bug ClaimWithoutLock a second relay claims a row whose
// lease is live; the correct relay does not.
func TestClaimWithoutLock(t *testing.T) {
	tests := []struct {
		name      string
		bug       plant.Bug
		wantClaim int
	}{
		{"skip locked with lease", plant.None, 0},
		{"planted claim-without-lock", plant.ClaimWithoutLock, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			ctx := t.Context()
			insertIntents(t, b.DB, 1, 2, 3)
			a := b.relay(t, "relay-a", nil)
			if cs, err := a.Claim(ctx, 0); err != nil || len(cs) != 3 {
				t.Fatalf("relay A claim = %d, %v; want 3", len(cs), err)
			}
			rb := b.relay(t, "relay-b", func(c *relay.Config) { c.Plant = tt.bug })
			cs, err := rb.Claim(ctx, 0)
			if err != nil {
				t.Fatalf("relay B claim: %v", err)
			}
			if len(cs) != tt.wantClaim {
				t.Fatalf("relay B claimed %d rows under live leases; want %d", len(cs), tt.wantClaim)
			}
			for _, c := range cs {
				if c.StateBefore != evidence.StateClaimed || c.ClaimVersion != 2 {
					t.Errorf("double claim %+v; want from CLAIMED at version 2", c)
				}
			}
		})
	}
}

// The correct relay skips a row another transaction holds locked; the
// planted ClaimWithoutLock reads it anyway and waits for the lock to claim
// it. The race is forced: the row is held FOR UPDATE in an open transaction.
func TestClaimWithoutLockRacesPastALock(t *testing.T) {
	b := setup(t)
	ctx := t.Context()
	insertIntents(t, b.DB, 1)
	// Hold the row locked as a claiming relay would, mid-transaction.
	tx, err := b.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var id int64
	if err := tx.QueryRowContext(ctx, `SELECT id FROM outbox WHERE event_id = 'e-1' FOR UPDATE`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	good := b.relay(t, "relay-good", nil)
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second) // a blocking claim fails fast
	defer cancel()
	if cs, err := good.Claim(gctx, 0); err != nil || len(cs) != 0 {
		t.Fatalf("correct relay claimed %d locked rows (err %v); want 0 (SKIP LOCKED)", len(cs), err)
	}
	bad := b.relay(t, "relay-bad", func(c *relay.Config) { c.Plant = plant.ClaimWithoutLock })
	done := make(chan int, 1)
	go func() {
		cs, err := bad.Claim(ctx, 0)
		if err != nil {
			t.Error(err)
		}
		done <- len(cs)
	}()
	// The planted relay's snapshot read does not skip the locked row: its
	// UPDATE waits for the lock instead.
	time.Sleep(200 * time.Millisecond)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := <-done; n != 1 {
		t.Fatalf("planted relay claimed %d rows; want 1 (it waited on the lock instead of skipping)", n)
	}
}

// Two relays that claim at the same moment split the due rows between
// them, half each, every time: the claim reads its index in order and
// locks only what it returns, so SKIP LOCKED skips the other relay's rows
// instead of finding every row locked (as a filesort over all candidates
// made it), and the two claims never deadlock on each other's gaps (they
// did under REPEATABLE READ: see claimTxOptions).
func TestSimultaneousClaimsSplitTheRows(t *testing.T) {
	b := setup(t)
	ctx := t.Context()
	relays := []*relay.Relay{b.relay(t, "relay-a", nil), b.relay(t, "relay-b", nil)}
	const rounds, n = 30, 8
	for round := range rounds {
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = int64(round*n + i + 1)
		}
		insertIntents(t, b.DB, ids...)
		got := make([][]relay.Claimed, len(relays))
		errs := make([]error, len(relays))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, r := range relays {
			wg.Go(func() {
				<-start
				got[i], errs[i] = r.Claim(ctx, n/2)
			})
		}
		close(start)
		wg.Wait()
		seen := map[string]bool{}
		for i := range relays {
			if errs[i] != nil {
				t.Fatalf("round %d: %s: %v", round, relays[i].Actor(), errs[i])
			}
			if len(got[i]) != n/2 {
				t.Fatalf("round %d: %s claimed %d rows; want %d", round, relays[i].Actor(), len(got[i]), n/2)
			}
			for _, c := range got[i] {
				if seen[c.EventID] {
					t.Fatalf("round %d: %s claimed by both relays", round, c.EventID)
				}
				seen[c.EventID] = true
			}
		}
		// Each round starts as a fresh outbox does, with no CLAIMED row:
		// that is when two claims lock the same gaps.
		if _, err := b.DB.ExecContext(ctx, `UPDATE outbox SET state = 'SENT' WHERE state = 'CLAIMED'`); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDefaultPollWithinSpec: the relay's default poll is the one spec
// promises (spec.RelayPoll, which witness-claim-wait holds the evidence
// to): a longer default breaks every polling relay's liveness bound, and
// the actor process takes this default.
func TestDefaultPollWithinSpec(t *testing.T) {
	if relay.DefaultPoll <= 0 || relay.DefaultPoll > spec.RelayPoll {
		t.Errorf("DefaultPoll = %v; want in (0, spec.RelayPoll = %v]", relay.DefaultPoll, spec.RelayPoll)
	}
}
