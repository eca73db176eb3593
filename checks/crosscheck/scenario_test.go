package crosscheck

import (
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// Cross-checks of one scenario on made-up binlogs: what real runs never
// write. The cross-checks on a real run's witnesses, each edit of an
// actor's log failing with its rule, are checks' (witnessed_test.go): they
// go through the verifier's replay.

// TestWitnessCASTransactions: a claim's or a mark's transaction holds
// claims (marks) and nothing else; real runs never write anything else in
// them, so the binlog is made up here.
func TestWitnessCASTransactions(t *testing.T) {
	row := func(state string, v int64, id any) map[string]binlog.Value {
		return map[string]binlog.Value{"event_id": "e-1", "state": state, "claim_version": v, "claim_id": id, "lease_until": nil}
	}
	stock := binlog.RowChange{Table: "stock", Op: binlog.Update, Before: map[string]binlog.Value{"sku": "S", "quantity": int64(2)},
		After: map[string]binlog.Value{"sku": "S", "quantity": int64(1)}}
	claim := binlog.RowChange{Table: "outbox", Op: binlog.Update, Before: row("PENDING", 0, nil), After: row("CLAIMED", 1, "r")}
	mark := binlog.RowChange{Table: "outbox", Op: binlog.Update, Before: row("CLAIMED", 1, "r"), After: row("SENT", 1, "r")}
	v1, rows := int64(1), int64(1)
	for _, tc := range []struct {
		name  string
		tx    []binlog.RowChange
		event evidence.Event
		rule  string
	}{
		{"claim alone", []binlog.RowChange{claim}, evidence.Event{Kind: evidence.KindClaim, EventID: "e-1", ClaimVersion: &v1, ClaimID: "r",
			StateBefore: "PENDING"}, ""},
		{"claim with a stock write", []binlog.RowChange{claim, stock}, evidence.Event{Kind: evidence.KindClaim, EventID: "e-1",
			ClaimVersion: &v1, ClaimID: "r", StateBefore: "PENDING"}, "witness-claim"},
		{"mark alone", []binlog.RowChange{mark}, evidence.Event{Kind: evidence.KindMark, EventID: "e-1", ClaimVersion: &v1, ClaimID: "r",
			Rows: &rows}, ""},
		{"mark with a stock write", []binlog.RowChange{mark, stock}, evidence.Event{Kind: evidence.KindMark, EventID: "e-1",
			ClaimVersion: &v1, ClaimID: "r", Rows: &rows}, "witness-mark"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newScenarioDB("ofa_x_s", []binlog.Transaction{{GTID: binlog.GTID{Server: 1, Seq: 7}, File: "binlog.000001", Changes: tc.tx}})
			s := &scenarioCheck{db: db, events: []Event{{e: tc.event}}}
			s.claims()
			s.marks()
			got := ""
			for _, r := range s.reasons {
				got = r.Rule
				if !strings.Contains(r.Message, "also wrote stock update") || r.Witness != "GTID 0-1-7 (binlog.000001@0)" {
					t.Errorf("reason %+v; want the stock write named, at GTID 0-1-7", r)
				}
			}
			if got != tc.rule || len(s.reasons) > 1 {
				t.Errorf("reasons %+v; want %q", s.reasons, tc.rule)
			}
		})
	}
}

// TestWitnessEffectApart: an effect whose inbox row was committed by
// another transaction (the planted inbox-and-effect-separate-tx) is named
// with both transactions, and the inbox row is not reported again as an
// unlogged write.
func TestWitnessEffectApart(t *testing.T) {
	inbox := binlog.RowChange{Table: "inbox", Op: binlog.Insert, After: map[string]binlog.Value{"consumer": "c", "event_id": "e-1",
		"topic": "t", "part": int64(0), "msg_offset": int64(0)}}
	note := binlog.RowChange{Table: "notification", Op: binlog.Insert, After: map[string]binlog.Value{"id": int64(1), "event_id": "e-1",
		"order_id": int64(1), "consumer": "c"}}
	db := newScenarioDB("ofa_x_s", []binlog.Transaction{
		{GTID: binlog.GTID{Server: 1, Seq: 7}, File: "binlog.000001", Pos: 700, Changes: []binlog.RowChange{inbox}},
		{GTID: binlog.GTID{Server: 1, Seq: 8}, File: "binlog.000001", Pos: 800, Changes: []binlog.RowChange{note}},
	})
	p, o, n := int32(0), int64(0), int64(1)
	s := &scenarioCheck{db: db, events: []Event{
		{e: evidence.Event{Kind: evidence.KindInboxInsert, Actor: "c1", EventID: "e-1", Consumer: "c", Topic: "t", Partition: &p, Offset: &o, TrxID: "0-1-7"}},
		{e: evidence.Event{Kind: evidence.KindEffect, Actor: "c1", EventID: "e-1", Consumer: "c", OrderID: &n, NotificationID: &n, TrxID: "0-1-8"}},
	}}
	s.effects()
	s.unloggedWrites()
	if len(s.reasons) != 1 || s.reasons[0].Rule != "witness-effect-tx" || s.reasons[0].Witness != "GTID 0-1-8 (binlog.000001@800)" ||
		!strings.Contains(s.reasons[0].Message, "its inbox row is in another transaction, GTID 0-1-7 (binlog.000001@700)") ||
		strings.Contains(s.reasons[0].Message, "committed by transaction") {
		t.Fatalf("reasons %+v; want one witness-effect-tx naming both transactions (the trx_ids agree with them)", s.reasons)
	}
}

// TestLeaseOffClock: a claim's lease_until must be the server's changed_at
// plus the lease, to the microsecond.
func TestLeaseOffClock(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC)
	lease := int64(30000)
	img := func(until time.Time, withChanged bool) *binlog.RowChange {
		c := &binlog.RowChange{Table: "outbox", Op: binlog.Update, After: map[string]binlog.Value{"lease_until": until}}
		if withChanged {
			c.After["changed_at"] = at
		}
		return c
	}
	exact := at.Add(30 * time.Second)
	for _, tc := range []struct {
		name  string
		c     *binlog.RowChange
		lease *int64
		off   bool
	}{
		{"on the clock", img(exact, true), &lease, false},
		{"a microsecond early", img(exact.Add(-time.Microsecond), true), &lease, true},
		{"a microsecond late", img(exact.Add(time.Microsecond), true), &lease, true},
		{"an hour ahead", img(exact.Add(time.Hour), true), &lease, true},
		{"no changed_at", img(exact.Add(time.Hour), false), &lease, false},
		{"no lease logged", img(exact.Add(time.Hour), true), nil, false},
	} {
		if got := leaseOffClock(tc.c, tc.lease); (got != "") != tc.off {
			t.Errorf("%s: leaseOffClock = %q, want off=%v", tc.name, got, tc.off)
		}
	}
}

// TestWitnessClaimBatch: a claim transaction that took more rows than the
// batch its relay logged fails witness-claim-batch; one within it, or
// whose claims logged no batch (an older log), does not.
func TestWitnessClaimBatch(t *testing.T) {
	claim := func(ev string) binlog.RowChange {
		row := func(state string, v int64, id any) map[string]binlog.Value {
			return map[string]binlog.Value{"event_id": ev, "state": state, "claim_version": v, "claim_id": id, "lease_until": nil}
		}
		return binlog.RowChange{Table: "outbox", Op: binlog.Update, Before: row("PENDING", 0, nil), After: row("CLAIMED", 1, "r")}
	}
	v1 := int64(1)
	for _, tc := range []struct {
		name  string
		rows  int
		batch *int64
		fail  bool
	}{
		{"three rows of a batch of three", 3, evidence.Ptr(int64(3)), false},
		{"three rows of a batch of two", 3, evidence.Ptr(int64(2)), true},
		{"one row of a batch of one", 1, evidence.Ptr(int64(1)), false},
		{"no batch logged", 3, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tx []binlog.RowChange
			var events []Event
			for i := range tc.rows {
				ev := "e-" + string(rune('1'+i))
				tx = append(tx, claim(ev))
				events = append(events, Event{e: evidence.Event{Kind: evidence.KindClaim, EventID: ev, ClaimVersion: &v1, ClaimID: "r",
					StateBefore: "PENDING", Batch: tc.batch}})
			}
			db := newScenarioDB("ofa_x_s", []binlog.Transaction{{GTID: binlog.GTID{Server: 1, Seq: 9}, File: "binlog.000001", Changes: tx}})
			s := &scenarioCheck{db: db, events: events}
			s.claims()
			var got []string
			for _, r := range s.reasons {
				got = append(got, r.Rule+": "+r.Message)
			}
			failed := len(got) == 1 && strings.HasPrefix(got[0], "witness-claim-batch: a claim transaction took 3 rows")
			if failed != tc.fail || (!tc.fail && len(got) > 0) {
				t.Errorf("reasons %v; want a witness-claim-batch failure: %v", got, tc.fail)
			}
		})
	}
}
