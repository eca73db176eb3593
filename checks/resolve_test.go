package checks

import (
	"slices"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// orderTx is the binlog of order id's transaction (stock left, key).
func orderTx(seq uint64, id, stock int64, key string) binlog.Transaction {
	return binlog.Transaction{GTID: binlog.GTID{Server: 1, Seq: seq}, Changes: []binlog.RowChange{
		{Table: "stock", Op: binlog.Update, Before: map[string]any{"quantity": stock + 1}, After: map[string]any{"sku": "SKU", "quantity": stock}},
		{Table: "orders", Op: binlog.Insert, After: map[string]any{"id": id, "sku": "SKU", "quantity": int64(1), "created_at": at(100),
			"principal": "user-1", "amount_cents": int64(1250)}},
		{Table: "order_lines", Op: binlog.Insert, After: map[string]any{"order_id": id, "sku": "SKU", "quantity": int64(1),
			"price_cents": int64(1250)}},
		{Table: "idempotency_records", Op: binlog.Insert, After: map[string]any{"idem_key": key, "status_code": int64(201), "order_id": id}},
		{Table: "outbox", Op: binlog.Insert, After: map[string]any{"event_id": evidence.EventIDFor(id), "aggregate_id": id}},
	}}
}

func claimTx(seq uint64, id string, v int64, claimID string, lease time.Time) binlog.Transaction {
	return binlog.Transaction{GTID: binlog.GTID{Server: 1, Seq: seq}, Changes: []binlog.RowChange{{Table: "outbox", Op: binlog.Update,
		Before: map[string]any{"event_id": id, "aggregate_id": int64(1), "claim_version": v - 1, "state": "PENDING"},
		After: map[string]any{"event_id": id, "aggregate_id": int64(1), "claim_version": v, "claim_id": claimID, "state": "CLAIMED",
			"lease_until": lease}}}}
}

func effectTx(seq uint64, id string, nid int64) binlog.Transaction {
	return binlog.Transaction{GTID: binlog.GTID{Server: 1, Seq: seq}, Changes: []binlog.RowChange{
		{Table: "inbox", Op: binlog.Insert, After: map[string]any{"consumer": "notifier", "event_id": id, "topic": "t", "part": int64(0),
			"msg_offset": int64(0), "received_at": at(500)}},
		{Table: "notification", Op: binlog.Insert, After: map[string]any{"id": nid, "consumer": "notifier", "event_id": id,
			"order_id": int64(1), "created_at": at(500)}},
	}}
}

func kinds(rs []resolved) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.ev.Kind)+" "+r.ev.EventID)
	}
	return out
}

func TestResolveUnlogged(t *testing.T) {
	committed := evidence.Event{Kind: evidence.KindOrderCommitted, OrderID: evidence.Ptr(int64(1)), EventID: "e-1", Time: at(150)}
	claim := evidence.Event{Kind: evidence.KindClaim, EventID: "e-1", ClaimVersion: evidence.Ptr(int64(1)), ClaimID: "r1",
		LeaseMS: evidence.Ptr(int64(1000)), Time: at(200)}
	publish := evidence.Event{Kind: evidence.KindPublish, EventID: "e-1", ClaimVersion: evidence.Ptr(int64(1)), ClaimID: "r1", Time: at(210)}
	replayed := evidence.Event{Kind: evidence.KindOrderReplayed, OrderID: evidence.Ptr(int64(1)), Time: at(120)}
	receive := evidence.Event{Kind: evidence.KindReceive, EventID: "e-1", Topic: "t", Partition: evidence.Ptr(int32(0)),
		Offset: evidence.Ptr(int64(0)), Time: at(600)}
	inbox := evidence.Event{Kind: evidence.KindInboxInsert, EventID: "e-1", Consumer: "notifier", Time: at(620)}
	effect := evidence.Event{Kind: evidence.KindEffect, EventID: "e-1", NotificationID: evidence.Ptr(int64(7)), Time: at(620)}
	for _, tc := range []struct {
		name   string
		txs    []binlog.Transaction
		logged []evidence.Event
		want   []string
	}{
		{"everything logged", []binlog.Transaction{orderTx(1, 1, 9, "k1"), claimTx(2, "e-1", 1, "r1", at(1200)), effectTx(3, "e-1", 7)},
			[]evidence.Event{committed, claim, publish, receive, inbox, effect}, nil},
		{"an order committed and not logged", []binlog.Transaction{orderTx(1, 1, 9, "k1")}, []evidence.Event{claim, replayed},
			[]string{"order_committed e-1"}},
		{"a claim committed and not logged", []binlog.Transaction{claimTx(2, "e-1", 1, "r1", at(1200))}, []evidence.Event{committed, publish},
			[]string{"claim e-1"}},
		{"a claim of another version is not the one logged", []binlog.Transaction{claimTx(2, "e-1", 2, "r2", at(2200))},
			[]evidence.Event{committed, claim}, []string{"claim e-1"}},
		{"an effect committed and not logged", []binlog.Transaction{effectTx(3, "e-1", 7)}, []evidence.Event{committed, receive},
			[]string{"inbox_insert e-1", "effect e-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, res := resolveTransactions(tc.txs, tc.logged)
			if !slices.Equal(kinds(got), tc.want) {
				t.Fatalf("resolved %v; want %v", kinds(got), tc.want)
			}
			if (len(res) > 0) != (len(tc.want) > 0) {
				t.Fatalf("resolutions %v for %v", res, tc.want)
			}
		})
	}
}

// The synthesized events go before the first logged event that needs
// them, with the values the binlog holds.
func TestResolvedPlacement(t *testing.T) {
	claim := evidence.Event{Kind: evidence.KindClaim, EventID: "e-1", ClaimVersion: evidence.Ptr(int64(1)), ClaimID: "r1", Time: at(50)}
	got, _ := resolveTransactions([]binlog.Transaction{orderTx(1, 1, 9, "k1")}, []evidence.Event{claim})
	if len(got) != 1 {
		t.Fatalf("resolved %v", kinds(got))
	}
	e := got[0].ev
	if !got[0].at.Before(claim.Time) {
		t.Errorf("order_committed placed at %v, not before the claim at %v", got[0].at, claim.Time)
	}
	if *e.OrderID != 1 || e.Key != "k1" || *e.Stock != 9 || *e.Quantity != 1 || e.Status != 201 || e.SKU != "SKU" {
		t.Errorf("order_committed %+v does not carry the binlog's values", e)
	}
	if e.Principal != "user-1" || e.AmountCents == nil || *e.AmountCents != 1250 ||
		!slices.Equal(e.Lines, []string{"quantity=1 price_cents=1250 stock=9 sku=SKU"}) {
		t.Errorf("order_committed %+v does not carry the order's principal, amount and lines", e)
	}
	want := []string{"stock", "orders", "order_lines", "idempotency_records", "outbox"}
	if !slices.Equal(e.Writes, want) {
		t.Errorf("writes %v; want %v", e.Writes, want)
	}
	publish := evidence.Event{Kind: evidence.KindPublish, EventID: "e-1", ClaimVersion: evidence.Ptr(int64(1)), ClaimID: "r1", Time: at(300)}
	got, _ = resolveTransactions([]binlog.Transaction{claimTx(2, "e-1", 1, "r1", at(1200))}, []evidence.Event{publish})
	if len(got) != 1 || !got[0].at.Before(publish.Time) {
		t.Fatalf("claim placed at %v, not before its publish at %v", got, publish.Time)
	}
	if got[0].ev.LeaseUntil == nil || !got[0].ev.LeaseUntil.Equal(at(1200)) || got[0].ev.StateBefore != "PENDING" {
		t.Errorf("claim %+v does not carry the binlog's lease and state", got[0].ev)
	}
}
