package model

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/model/modeltest"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The read API and the counters, bounds and messages the derivations and
// the verdict depend on.

var update = flag.Bool("update", false, "rewrite testdata/messages.golden")

// step folds events (seq numbered from 1) into m.
func step(m *Model, events ...evidence.Event) *Model {
	for i := range events {
		m.Step(&events[i], Source{Seq: int64(i + 1)})
	}
	return m
}

func ev(kind evidence.Kind, eventID string) evidence.Event {
	return evidence.Event{Kind: kind, EventID: eventID, Time: modeltest.Base}
}

// TestMessages pins every violation of every history, with its source and
// message, to testdata/messages.golden (go test -update rewrites it): the
// messages are what a reviewer reads in the verdict.
func TestMessages(t *testing.T) {
	var b strings.Builder
	for _, dir := range modeltest.Histories(t, histories) {
		h := modeltest.Load(t, dir)
		vs, _ := replay(t, h, nil).Violations()
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s at %s (%s): %s\n", h.Name, v.Rule, v.Source, v.EventID, v.Message)
		}
	}
	const golden = "testdata/messages.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("violations differ from %s (go test -update rewrites it):\n%s", golden, b.String())
	}
}

func TestSourceString(t *testing.T) {
	for _, c := range []struct {
		src  Source
		want string
	}{
		{Source{Seq: 7}, "seq 7"},
		{Source{Log: "u80/x/relay-a.jsonl", Line: 3, Seq: 7}, "u80/x/relay-a.jsonl seq 7"},
	} {
		if got := c.src.String(); got != c.want {
			t.Errorf("%+v.String() = %q; want %q", c.src, got, c.want)
		}
	}
}

// TestConsumerCounts pins the consumer-side counters the derivations
// read, on the histories that move them.
func TestConsumerCounts(t *testing.T) {
	for _, c := range []struct {
		history string
		want    [6]int64
	}{
		{"ok-order-lifecycle", [6]int64{2, 0, 0, 0, 0, 0}},
		{"aggregate-on-two-partitions", [6]int64{2, 1, 0, 0, 0, 0}},
		{"effect-out-of-order", [6]int64{1, 0, 1, 0, 0, 0}},
		{"receive-out-of-version", [6]int64{1, 0, 0, 0, 0, 0}},
		{"offset-lag", [6]int64{1, 0, 0, 1, 0, 0}},
		{"ok-effect-db-error", [6]int64{1, 0, 0, 0, 1, 1}},
	} {
		n := replay(t, modeltest.Load(t, histories+"/"+c.history), nil).Counts()
		got := [6]int64{n.Partitions, n.SplitAggregates, n.EffectsOutOfOrder, n.Lag, n.RolledBackEffects, n.UnknownCommits}
		if got != c.want || n.ResolvedCommits != 0 {
			t.Errorf("%s: partitions, split, out of order, lag, rolled back, unknown = %v (resolved %d); want %v (0)",
				c.history, got, n.ResolvedCommits, c.want)
		}
	}
	m := replay(t, modeltest.Load(t, histories+"/ok-effect-db-error"), nil)
	m.Release()
	for point, want := range map[string]int64{"effect-insert-error": 0, "effect-commit-killed": 1} {
		if got, ok := m.CommittedAtFault(point); !ok || got != want {
			t.Errorf("CommittedAtFault(%s) = %d, %v; want %d", point, got, ok, want)
		}
	}
	if _, ok := m.CommittedAtFault("after-publish-before-mark"); ok {
		t.Error("CommittedAtFault of a point without a fault says ok")
	}
	m = replay(t, modeltest.Load(t, histories+"/ok-consumer-restart"), nil)
	m.Release() // the derivations read members after it
	want := []MemberPartition{{Topic: "t", Partition: 0, FirstReceived: 3, LastCommitted: 4}}
	if got := m.Member("consumer-2"); !slices.Equal(got, want) {
		t.Errorf("Member(consumer-2) = %+v; want %+v", got, want)
	}
	if got := m.Member("consumer-1"); len(got) != 1 || got[0].FirstReceived != 0 || got[0].LastCommitted != 3 {
		t.Errorf("Member(consumer-1) = %+v; want first 0, last commit 3", got)
	}
	if n := replay(t, modeltest.Load(t, histories+"/ok-commit-unknown-committed"), nil).Counts(); n.ResolvedCommits != 1 || n.InboxRows != 1 {
		t.Errorf("ok-commit-unknown-committed: resolved %d, inbox rows %d; want 1, 1", n.ResolvedCommits, n.InboxRows)
	}
}

// TestCounts pins the counters the derivations read.
func TestCounts(t *testing.T) {
	m := replay(t, modeltest.Load(t, histories+"/ok-offset-replay"), nil)
	want := Counts{Events: 12, Claims: 1, Replays: 1, Received: 1, InboxRejects: 1, Intents: 1, InboxRows: 1, Notifications: 1,
		Requests: 1, OKOrders: 1, Partitions: 1}
	if got := m.Counts(); got != want {
		t.Errorf("Counts() = %+v; want %+v", got, want)
	}
	if m.Events() != 12 {
		t.Errorf("Events() = %d; want 12", m.Events())
	}
	if got, want := m.Deliveries("e-1"), (Deliveries{Received: 1, Effects: 1, Rejected: 1}); got != want {
		t.Errorf("Deliveries(e-1) = %+v; want %+v", got, want)
	}
	if got := m.Deliveries("e-404"); got != (Deliveries{}) {
		t.Errorf("Deliveries of an unknown id = %+v; want zero", got)
	}
	if got := m.Faults(); !slices.Equal(got, []string{"after-effect-before-offset-commit"}) {
		t.Errorf("Faults() = %v", got)
	}
}

// TestDoubleClaims: a claim on a live lease counts as a double claim when
// another actor holds the lease, not when the holder claims again.
func TestDoubleClaims(t *testing.T) {
	m := replay(t, modeltest.Load(t, histories+"/claim-on-live-lease"), nil)
	if n := m.Counts(); n.Claims != 2 || n.DoubleClaims != 1 {
		t.Errorf("relay-b over relay-a: %d claims, %d double; want 2, 1", n.Claims, n.DoubleClaims)
	}
	order := ev(evidence.KindOrderCommitted, "e-1")
	order.OrderID, order.Writes = evidence.Ptr[int64](1), []string{evidence.WriteOutbox}
	claim := func(v int64) evidence.Event {
		e := ev(evidence.KindClaim, "e-1")
		e.Actor, e.ClaimVersion, e.ClaimID = "relay-a", &v, "relay-a"
		e.LeaseUntil = evidence.Ptr(modeltest.Base.Add(time.Minute))
		return e
	}
	m = step(New(nil, nil), order, claim(1), claim(2))
	if n := m.Counts(); n.Claims != 2 || n.DoubleClaims != 0 {
		t.Errorf("relay-a again: %d claims, %d double; want 2, 0", n.Claims, n.DoubleClaims)
	}
	if got := reported(m); !slices.Contains(got, string(RuleClaimOnLiveLease)) {
		t.Errorf("rules = %v; want claim-on-live-lease", got)
	}
}

// TestRequests: the answers kept in order, the 2xx order ids counted once,
// and the statuses.
func TestRequests(t *testing.T) {
	var events []evidence.Event
	for i, st := range []int{199, 200, 201, 299, 300, 409} {
		e := ev(evidence.KindOrderReplayed, "")
		e.Status, e.OrderID = st, evidence.Ptr(int64(i))
		events = append(events, e)
	}
	events = append(events, ev(evidence.KindOrderRejected, ""), events[2]) // no order id; 201 again
	m := step(New(nil, nil), events...)
	if n := m.Counts(); n.Requests != 8 || n.OKOrders != 3 {
		t.Errorf("%d requests, %d ok order ids; want 8, 3 (200, 201, 299)", n.Requests, n.OKOrders)
	}
	if m.AnsweredWith(201) != 2 || m.AnsweredWith(409) != 1 || m.AnsweredWith(0) != 1 {
		t.Errorf("answered 201: %d, 409: %d, 0: %d; want 2, 1, 1", m.AnsweredWith(201), m.AnsweredWith(409), m.AnsweredWith(0))
	}
	reqs := m.Requests()
	if len(reqs) != maxRequests || reqs[1].Status != 200 || *reqs[1].OrderID != 1 || reqs[0].Kind != evidence.KindOrderReplayed {
		t.Fatalf("Requests() = %+v; want the first %d in order", reqs, maxRequests)
	}
	*reqs[1].OrderID = 99
	if *m.Requests()[1].OrderID != 1 {
		t.Error("Requests() shares the model's order ids")
	}
	m = step(New(nil, nil), ev(evidence.KindOrderRejected, ""))
	if r := m.Requests(); len(r) != 1 || r[0].OrderID != nil {
		t.Errorf("an answer without an order id: %+v", r)
	}
}

// TestSeededIntents: a decoy (aggregate -1) is not the scenario's intent;
// what Intent returns is a copy.
func TestSeededIntents(t *testing.T) {
	m := replay(t, modeltest.Load(t, histories+"/ok-seeded-observed"), nil)
	if m.KeyIntent() != "e-5" {
		t.Errorf("KeyIntent() = %q; want e-5 (e-9 is a decoy)", m.KeyIntent())
	}
	d, ok := m.Intent("e-9")
	if !ok || !d.Decoy || d.Touched || d.Seeded == nil || d.Seeded.State != "SENT" || d.Seeded.ClaimVersion != 3 ||
		*d.Seeded.OrderID != -1 || d.LastObserved == nil || d.LastObserved.State != "SENT" || d.State != "SENT" {
		t.Fatalf("Intent(e-9) = %+v, %v", d, ok)
	}
	*d.Seeded.OrderID, d.LastObserved.State = 7, "PENDING"
	if again, _ := m.Intent("e-9"); *again.Seeded.OrderID != -1 || again.LastObserved.State != "SENT" {
		t.Error("Intent shares the model's observations")
	}
	if in, _ := m.Intent("e-5"); in.Decoy || in.AggregateID != 5 {
		t.Errorf("Intent(e-5) = %+v; want aggregate 5, no decoy", in)
	}
	if _, ok := m.Intent("e-404"); ok {
		t.Error("Intent of an unknown id")
	}
	var ids []string
	for in := range m.Intents() {
		ids = append(ids, in.EventID)
	}
	if !slices.Equal(ids, []string{"e-9", "e-5"}) {
		t.Errorf("Intents() = %v; want creation order", ids)
	}
}

// TestObservedStates: consecutive repeats collapse; an observation may
// name no order.
func TestObservedStates(t *testing.T) {
	var events []evidence.Event
	for _, st := range []string{"PENDING", "PENDING", "CLAIMED", "SENT", "SENT"} {
		e := ev(evidence.KindObserve, "e-1")
		e.State = st
		events = append(events, e)
	}
	m := step(New(nil, nil), events...)
	if got := m.ObservedStates("e-1"); !slices.Equal(got, []string{"PENDING", "CLAIMED", "SENT"}) {
		t.Errorf("ObservedStates = %v", got)
	}
	if got := m.ObservedStates("e-404"); got != nil {
		t.Errorf("ObservedStates of an unknown id = %v", got)
	}
}

// TestTokens pins the token states the send-boundary metrics read.
func TestTokens(t *testing.T) {
	m := replay(t, modeltest.Load(t, histories+"/ok-send-before-mark-crash"), nil)
	got := m.Tokens("e-1")
	want := []Token{
		{Version: 1, ID: "relay-a", Claimed: true, Holder: "relay-a", Published: true, Marked: true, MarkRows: 0, MarkAt: 9, LastPublish: OutcomeAcked},
		{Version: 2, ID: "relay-b", Claimed: true, Holder: "relay-b", Published: true, Marked: true, MarkRows: 1, MarkAt: 10, LastPublish: OutcomeAcked},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Tokens(e-1) = %+v; want %+v", got, want)
	}
	got[0].Version = 9
	if m.Tokens("e-1")[0].Version != 1 {
		t.Error("Tokens shares the model's tokens")
	}
}

// TestMarkUnknownToken: a mark with a token the row never saw is stale and
// unpublished, and is remembered.
func TestMarkUnknownToken(t *testing.T) {
	order := ev(evidence.KindOrderCommitted, "e-1")
	order.OrderID, order.Writes = evidence.Ptr[int64](1), []string{evidence.WriteOutbox}
	mark := ev(evidence.KindMark, "e-1")
	mark.ClaimVersion, mark.ClaimID, mark.Rows = evidence.Ptr[int64](4), "ghost", evidence.Ptr[int64](1)
	m := step(New(nil, nil), order, mark)
	if got := reported(m); !slices.Equal(got, []string{string(RuleSentWithoutPublish), string(RuleStaleTokenMark)}) {
		t.Errorf("rules = %v", got)
	}
	if tk := m.Tokens("e-1"); len(tk) != 1 || tk[0] != (Token{Version: 4, ID: "ghost", Marked: true, MarkRows: 1, MarkAt: 2}) {
		t.Errorf("Tokens = %+v", tk)
	}
}

// TestPublishWithoutOffset: a publish that names a partition but no
// offset made no record (and does not crash the model).
func TestPublishWithoutOffset(t *testing.T) {
	order := ev(evidence.KindOrderCommitted, "e-1")
	order.OrderID, order.Writes = evidence.Ptr[int64](1), []string{evidence.WriteOutbox}
	claim := ev(evidence.KindClaim, "e-1")
	claim.ClaimVersion, claim.ClaimID = evidence.Ptr[int64](1), "relay-a"
	for _, pub := range []func(e *evidence.Event){
		func(e *evidence.Event) { e.Partition = evidence.Ptr[int32](0) },
		func(e *evidence.Event) { e.Offset = evidence.Ptr[int64](0) },
	} {
		p := ev(evidence.KindPublish, "e-1")
		p.ClaimVersion, p.ClaimID, p.Topic = evidence.Ptr[int64](1), "relay-a", "t"
		pub(&p)
		m := step(New(nil, nil), order, claim, p)
		if tk := m.Tokens("e-1"); len(tk) != 1 || tk[0].Published {
			t.Errorf("Tokens = %+v; want unpublished", tk)
		}
		if len(m.recordOrder) != 0 {
			t.Errorf("a record was made of %+v", p)
		}
	}
}

// TestFaultTokenWithoutRow: a fault naming a token of an event id that has
// no outbox row is a fault-mismatch, reported with the claim-token layer.
func TestFaultTokenWithoutRow(t *testing.T) {
	obs := ev(evidence.KindObserve, "e-404")
	obs.State = "PENDING"
	fault := ev(evidence.KindFault, "e-404")
	fault.Point, fault.ClaimVersion, fault.ClaimID = "p", evidence.Ptr[int64](1), "relay-a"
	for _, c := range []struct {
		layers []spec.Layer
		want   []string
	}{
		{nil, []string{string(RuleFaultMismatch)}},
		{[]spec.Layer{spec.LayerDelivery}, nil},
	} {
		if got := reported(step(New(c.layers, []string{"p"}), obs, fault)); !slices.Equal(got, c.want) {
			t.Errorf("layers %v: rules = %v; want %v", c.layers, got, c.want)
		}
	}
}

// TestOrdersAndStock pins what the order and stock metrics read.
func TestOrdersAndStock(t *testing.T) {
	m := replay(t, modeltest.Load(t, histories+"/ok-send-before-mark-crash"), nil)
	want := Order{ID: 1, SKU: "SKU", Quantity: 1, Key: "k1", Status: 201, Row: true, Lines: true, Idem: true,
		src: Source{Log: "events.jsonl", Line: 2, Seq: 2}}
	if o, ok := m.Order(1); !ok || !reflect.DeepEqual(o, want) {
		t.Errorf("Order(1) = %+v, %v; want %+v", o, ok, want)
	}
	if _, ok := m.Order(2); ok {
		t.Error("Order(2) of an order never committed")
	}
	var orders []Order
	for o := range m.Orders() {
		orders = append(orders, o)
	}
	if !reflect.DeepEqual(orders, []Order{want}) {
		t.Errorf("Orders() = %+v", orders)
	}
	if skus := m.SeededSKUs(); !slices.Equal(skus, []string{"SKU"}) {
		t.Errorf("SeededSKUs() = %v", skus)
	}
	if n, ok := m.SeedStock("SKU"); !ok || n != 10 {
		t.Errorf("SeedStock(SKU) = %d, %v; want 10", n, ok)
	}
	stock := map[string]int64{}
	for sku, n := range m.Stock() {
		stock[sku] = n
	}
	if len(stock) != 1 || stock["SKU"] != 9 || m.StockOf("SKU") != 9 {
		t.Errorf("Stock() = %v, StockOf(SKU) = %d; want SKU: 9", stock, m.StockOf("SKU"))
	}
}

// TestUnknownCommitsDecided: a commit of unknown outcome is settled by the
// next inbox decision of its row, an inbox_insert (it did not commit) or
// an inbox_reject (it did); one still open at the end is not.
func TestUnknownCommitsDecided(t *testing.T) {
	for _, c := range []struct {
		history          string
		unknown, decided int64
	}{
		{"ok-commit-unknown-committed", 1, 1}, // then inbox_reject
		{"ok-effect-db-error", 1, 1},          // then inbox_insert
	} {
		m := replay(t, modeltest.Load(t, histories+"/"+c.history), nil)
		if u, d := m.UnknownCommits(); u != c.unknown || d != c.decided {
			t.Errorf("%s: UnknownCommits() = %d, %d; want %d, %d", c.history, u, d, c.unknown, c.decided)
		}
	}
	// The binlog showed the unknown commit's inbox row (resolvetx.go puts
	// the unlogged insert before the commit_unknown, at its commit): the
	// replay's inbox_reject still decides it (the saved false alarm of
	// chaos --faults conn-kill --seed 8, testdata/false-alarm-connkill-seed8).
	{
		h := modeltest.Load(t, histories+"/ok-commit-unknown-committed")
		i := slices.IndexFunc(h.Events, func(e evidence.Event) bool { return e.Kind == evidence.KindCommitUnknown })
		ins := h.Events[i]
		ins.Kind, ins.Err = evidence.KindInboxInsert, ""
		ins.InboxKey = ins.EventID
		h.Events = slices.Insert(h.Events, i, ins)
		m := replay(t, h, nil)
		if u, d := m.UnknownCommits(); u != 1 || d != 1 {
			t.Errorf("with the row known before the commit_unknown: UnknownCommits() = %d, %d; want 1, 1", u, d)
		}
	}
	// Cut before the replay's decision, the commit stays open.
	h := modeltest.Load(t, histories+"/ok-commit-unknown-committed")
	i := slices.IndexFunc(h.Events, func(e evidence.Event) bool { return e.Kind == evidence.KindInboxReject })
	h.Events = h.Events[:i]
	m := replay(t, h, nil)
	if u, d := m.UnknownCommits(); u != 1 || d != 0 {
		t.Errorf("without the replay's decision: UnknownCommits() = %d, %d; want 1, 0", u, d)
	}
}
