package crosscheck

import (
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// TestWitnessDiedHolding: a broker record with a claim's token, which no
// publish line explains, is that claim's publish when its relay's process
// died (not cleanly) before logging one; the same record after a clean
// stop, or a second record with that token, stays unexplained.
func TestWitnessDiedHolding(t *testing.T) {
	const runID, topic = "r1", "ofa.r1.chaos"
	rec := func(offset int64) broker.Record {
		return broker.Record{Topic: topic, Partition: 0, Offset: offset, Key: []byte("1"), Headers: []broker.Header{
			{Key: headerEventID, Value: []byte("e-1")}, {Key: headerClaimVersion, Value: []byte("1")},
			{Key: headerClaimID, Value: []byte("relay-1-r1")}}}
	}
	claim := evidence.Event{Kind: evidence.KindClaim, Actor: "relay-1", EventID: "e-1", ClaimVersion: evidence.Ptr(int64(1)), ClaimID: "relay-1-r1"}
	exit := func(detail string) evidence.Event {
		return evidence.Event{Kind: evidence.KindProcessExit, Actor: "nemesis", Target: "relay-1", Detail: detail}
	}
	for _, c := range []struct {
		name        string
		exit        string
		records     int
		unexplained int
	}{
		{"killed", "killed by signal 9 (killed)", 1, 0},
		{"exit 1", "exit 1: claim: begin: invalid connection", 1, 0},
		{"clean stop", "exit 0", 1, 1},
		{"killed, two records", "killed by signal 9 (killed)", 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var recs []broker.Record
			for i := range c.records {
				recs = append(recs, rec(int64(i)))
			}
			s := &scenarioCheck{sc: &evidence.Scenario{ID: "chaos"}, runID: runID, records: map[recordKey]bool{},
				events: []Event{{e: claim}, {e: exit(c.exit)}},
				log:    &broker.Log{Topics: map[string][]broker.Partition{topic: {{Topic: topic, Partition: 0, End: int64(c.records), Records: recs}}}}}
			s.diedHolding()
			s.unloggedRecords()
			n := 0
			for _, r := range s.reasons {
				if r.Rule == "witness-unlogged-record" {
					n++
				}
			}
			if n != c.unexplained {
				t.Errorf("%d unexplained record(s); want %d: %+v", n, c.unexplained, s.reasons)
			}
		})
	}
}
