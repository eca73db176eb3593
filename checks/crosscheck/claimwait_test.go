package crosscheck

import (
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// waitT0 is the made-up binlog's clock origin.
var waitT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// waitHistory is a made-up binlog of a polling relay "r": intent e-1
// inserted at 0, claimed at 10 ms and SENT at 20 ms; intent e-2 (another
// order, or version 2 of order 1) inserted at at2 and claimed at claim2,
// and, unless e1Unsent, the mark of e-1 at sent1.
type waitHistory struct {
	at2, claim2, sent1 time.Duration
	e2Version          int64
	e1Unsent           bool
	poll               *int64
	faults             []evidence.Event
	otherClaim         time.Duration // a claim of e-3 by r at this time (0: none)
}

func (h waitHistory) check() *scenarioCheck {
	at := func(d time.Duration) time.Time { return waitT0.Add(d) }
	row := func(ev, state string, v int64, id any, stamp time.Duration) map[string]binlog.Value {
		return map[string]binlog.Value{"event_id": ev, "state": state, "claim_version": v, "claim_id": id, "changed_at": at(stamp)}
	}
	insert := func(ev string, agg, version int64, stamp time.Duration) binlog.RowChange {
		return binlog.RowChange{Table: "outbox", Op: binlog.Insert, After: map[string]binlog.Value{"event_id": ev, "aggregate_id": agg,
			"aggregate_version": version, "state": "PENDING", "claim_version": int64(0), "created_at": at(stamp), "changed_at": at(stamp)}}
	}
	claim := func(ev string, stamp time.Duration) binlog.RowChange {
		return binlog.RowChange{Table: "outbox", Op: binlog.Update, Before: row(ev, "PENDING", 0, nil, 0), After: row(ev, "CLAIMED", 1, "r", stamp)}
	}
	mark := func(ev string, stamp time.Duration) binlog.RowChange {
		return binlog.RowChange{Table: "outbox", Op: binlog.Update, Before: row(ev, "CLAIMED", 1, "r", 0), After: row(ev, "SENT", 1, "r", stamp)}
	}
	agg2 := int64(2)
	if h.e2Version > 1 {
		agg2 = 1
	}
	txs := [][]binlog.RowChange{{insert("e-1", 1, 1, 0)}, {claim("e-1", 10*time.Millisecond)}}
	if !h.e1Unsent {
		txs = append(txs, []binlog.RowChange{mark("e-1", h.sent1)})
	}
	if h.otherClaim > 0 {
		txs = append(txs, []binlog.RowChange{insert("e-3", 3, 1, h.otherClaim-time.Millisecond)}, []binlog.RowChange{claim("e-3", h.otherClaim)})
	}
	txs = append(txs, []binlog.RowChange{insert("e-2", agg2, max(h.e2Version, 1), h.at2)}, []binlog.RowChange{claim("e-2", h.claim2)})
	var bl []binlog.Transaction
	for i, tx := range txs {
		bl = append(bl, binlog.Transaction{GTID: binlog.GTID{Server: 1, Seq: uint64(i + 1)}, File: "binlog.000001", Changes: tx})
	}
	v1, timeout := int64(1), int64(1000)
	var events []Event
	for _, ev := range []string{"e-1", "e-2"} {
		events = append(events, Event{e: evidence.Event{Kind: evidence.KindClaim, EventID: ev, ClaimVersion: &v1, ClaimID: "r",
			PollMS: h.poll, PublishTimeoutMS: &timeout}})
	}
	for _, f := range h.faults {
		events = append(events, Event{e: f})
	}
	return &scenarioCheck{db: newScenarioDB("ofa_x_s", bl), events: events}
}

// TestWitnessClaimWait: an intent inserted while its polling relay was
// idle is claimed within spec.RelayPoll + spec.ClaimWaitSlack; one
// microsecond past fails witness-claim-wait. What the rule does not judge
// (a relay not known to poll, a round not over, an earlier version
// unsent, a fault, a backlog) does not fail whatever the wait.
func TestWitnessClaimWait(t *testing.T) {
	poll := int64(100)
	bound := spec.RelayPoll + spec.ClaimWaitSlack
	if ClaimWaitBound != bound {
		t.Fatalf("ClaimWaitBound = %v; want %v", ClaimWaitBound, bound)
	}
	at2 := 500 * time.Millisecond
	nemesis := func(kind evidence.Kind, point string, at time.Duration) evidence.Event {
		return evidence.Event{Kind: kind, Actor: evidence.ActorNemesis, Point: point, Target: "relay-1", Time: waitT0.Add(at)}
	}
	for _, tc := range []struct {
		name   string
		h      waitHistory
		judged int
		fail   bool
	}{
		{"claimed at the bound", waitHistory{at2: at2, claim2: at2 + bound, sent1: 20 * time.Millisecond, poll: &poll}, 1, false},
		{"claimed a microsecond past the bound", waitHistory{at2: at2, claim2: at2 + bound + time.Microsecond, sent1: 20 * time.Millisecond, poll: &poll}, 1, true},
		{"a relay not known to poll", waitHistory{at2: at2, claim2: at2 + 5*time.Second, sent1: 20 * time.Millisecond}, 0, false},
		{"the previous round not over (its row SENT after the insert, within its timeout)",
			waitHistory{at2: 100 * time.Millisecond, claim2: 100*time.Millisecond + 2*bound, sent1: 150 * time.Millisecond, poll: &poll}, 0, false},
		{"the previous round past its timeout and slack, its row never SENT",
			waitHistory{at2: 2 * time.Second, claim2: 2*time.Second + 2*bound, e1Unsent: true, poll: &poll}, 1, true},
		{"the previous round within its timeout and slack, its row never SENT",
			waitHistory{at2: 1500 * time.Millisecond, claim2: 1500*time.Millisecond + 2*bound, e1Unsent: true, poll: &poll}, 0, false},
		{"an earlier version unsent at the insert",
			waitHistory{at2: at2, claim2: at2 + 2*bound, sent1: at2 + time.Millisecond, e2Version: 2, poll: &poll}, 0, false},
		{"an earlier version SENT before the insert",
			waitHistory{at2: at2, claim2: at2 + 2*bound, sent1: 20 * time.Millisecond, e2Version: 2, poll: &poll}, 1, true},
		{"a pause of the relay open over the wait", waitHistory{at2: 3 * time.Second, claim2: 3*time.Second + 2*bound, sent1: 20 * time.Millisecond,
			poll: &poll, faults: []evidence.Event{nemesis(evidence.KindFault, "nemesis-pause", 3100*time.Millisecond)}}, 0, false},
		{"a pause healed over a second before the previous claim", waitHistory{at2: 5 * time.Second, claim2: 5*time.Second + 2*bound, sent1: 20 * time.Millisecond,
			poll: &poll, faults: []evidence.Event{nemesis(evidence.KindFault, "nemesis-pause", -3*time.Second), nemesis(evidence.KindHeal, "nemesis-pause", -2500*time.Millisecond)}}, 1, true},
		// e-3, inserted and claimed at once in between, is judged; e-2 is not.
		{"a busy relay (another claim between insert and claim)",
			waitHistory{at2: at2, claim2: at2 + 2*bound, sent1: 20 * time.Millisecond, otherClaim: at2 + bound, poll: &poll}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.h.check()
			s.claimWaits()
			if s.sum.claimWaits != tc.judged {
				t.Errorf("judged %d waits; want %d", s.sum.claimWaits, tc.judged)
			}
			failed := false
			for _, r := range s.reasons {
				if r.Rule != "witness-claim-wait" || !strings.Contains(r.Message, "e-2 was inserted") || !strings.HasPrefix(r.Witness, "GTID 0-1-") {
					t.Errorf("reason %+v; want witness-claim-wait of e-2 at its claim's GTID", r)
				}
				failed = true
			}
			if failed != tc.fail {
				t.Errorf("reasons %+v; want a failure: %v", s.reasons, tc.fail)
			}
		})
	}
}
