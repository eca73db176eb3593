package crosscheck

import (
	"fmt"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// How long a committed intent waits for a live, idle relay that polls
// (witness-claim-wait), from the binlog: the intent's insert stamps its
// created_at and each claim its changed_at, both on the database clock.
// A relay that polls in a loop says so in its claims (poll_ms); it claims
// at its next round what committed while it was idle, at most
// spec.RelayPoll later, plus spec.ClaimWaitSlack. An intent is judged only
// when the evidence shows its claiming relay alive and idle when it
// committed, and nothing else to hold it back:
//
//   - the relay's claims logged poll_ms (a relay run round by round, as
//     most scenarios drive it, is not judged);
//   - the relay had claimed before, in a transaction earlier than the
//     intent's insert (alive then), and every row of that transaction
//     was SENT before the insert (its round was over), or the claim came
//     longer than its publish timeout plus spec.PublishRoundSlack before
//     the insert (the round had ended, acknowledged or not);
//   - the relay made no other claim between the insert and the intent's
//     claim (a round busy with other rows: a backlog is not a poll);
//   - every earlier version of the intent's aggregate was SENT before
//     the insert (a relay holds a later version back until then);
//   - no fault fell between that previous claim and the intent's claim:
//     no fault, heal, process_exit or call_failed event, and no nemesis
//     fault open over that time (a pause, a cut link, a crashed server
//     hold the relay back, and a lease left by a dead relay holds a row).
//
// A relay is a claim id: replicas that share one (chaos's relays, one
// deployment) are judged as one, which holds, since the replica whose
// round was the claim id's last before the insert, and over, was idle and
// polls too. The database clock and the actors' (the fault events') are
// one host's.

// waitIntent is an outbox insert: when, and the aggregate version it is.
type waitIntent struct {
	event     string
	at        time.Time
	aggregate int64
	version   int64
}

// claimRound is one claim transaction of a claim id: when, and its rows.
type claimRound struct {
	id   string
	at   time.Time
	rows []string
	tx   *binlog.Transaction
}

// ClaimWaitBound is how long after its insert a committed intent may wait
// for its claim by a relay that was alive and idle: spec.RelayPoll plus
// spec.ClaimWaitSlack.
const ClaimWaitBound = spec.RelayPoll + spec.ClaimWaitSlack

// claimWaits holds every judged intent's wait to ClaimWaitBound.
func (s *scenarioCheck) claimWaits() {
	poll, timeout := s.relayBounds()
	if len(poll) == 0 {
		return
	}
	intents, rounds, sent := s.outboxTimes()
	first := map[string]int{} // event id -> index of its first claim's round
	for i, r := range rounds {
		for _, ev := range r.rows {
			if _, ok := first[ev]; !ok {
				first[ev] = i
			}
		}
	}
	faults := s.faultTimes()
	for _, in := range intents {
		i, ok := first[in.event]
		if !ok || poll[rounds[i].id] == 0 {
			continue
		}
		prev, ok := idleBefore(rounds, i, in.at, sent, timeout[rounds[i].id])
		if !ok || !earlierSent(intents, in, sent) || faults.within(prev, rounds[i].at) {
			continue
		}
		wait := rounds[i].at.Sub(in.at)
		s.sum.claimWaits++
		s.sum.longestWait = max(s.sum.longestWait, wait)
		if wait > ClaimWaitBound {
			s.add(finding.Reason{Rule: "witness-claim-wait", Status: finding.Fail, Witness: txWhere(*rounds[i].tx),
				Message: fmt.Sprintf("%s was inserted at %s and first claimed at %s by %s, %v later: a relay that polls (every %d ms, "+
					"it logged), alive and idle since its claim at %s, claims a committed intent within %v (spec's RelayPoll %v plus "+
					"ClaimWaitSlack %v)", in.event, in.at.Format(time.RFC3339Nano), rounds[i].at.Format(time.RFC3339Nano), rounds[i].id,
					wait, poll[rounds[i].id], prev.Format(time.RFC3339Nano), ClaimWaitBound, spec.RelayPoll, spec.ClaimWaitSlack)})
		}
	}
}

// relayBounds reads, per claim id, the poll and the publish timeout its
// claims logged (ms; the largest of each).
func (s *scenarioCheck) relayBounds() (poll, timeout map[string]int64) {
	poll, timeout = map[string]int64{}, map[string]int64{}
	for _, w := range s.kinds(evidence.KindClaim) {
		if p := i64(w.e.PollMS); p > poll[w.e.ClaimID] {
			poll[w.e.ClaimID] = p
		}
		if t := i64(w.e.PublishTimeoutMS); t > timeout[w.e.ClaimID] {
			timeout[w.e.ClaimID] = t
		}
	}
	for id, p := range poll {
		if p == 0 {
			delete(poll, id)
		}
	}
	return poll, timeout
}

// outboxTimes reads the binlog's outbox inserts, claim transactions (in
// log order) and first SENT of each event id, with their stamps.
func (s *scenarioCheck) outboxTimes() (intents []waitIntent, rounds []claimRound, sent map[string]time.Time) {
	sent = map[string]time.Time{}
	byTx := map[*binlog.Transaction]int{}
	for _, ch := range s.db.changes {
		c := ch.c
		ev, _ := vStr(c.After["event_id"])
		switch {
		case is(c, "outbox", binlog.Insert):
			at, ok := c.After["created_at"].(time.Time)
			agg, _ := vInt(c.After["aggregate_id"])
			v, _ := vInt(c.After["aggregate_version"])
			if ok {
				intents = append(intents, waitIntent{event: ev, at: at, aggregate: agg, version: v})
			}
		case markLike(c):
			if _, ok := sent[ev]; !ok {
				if at, ok := c.After["changed_at"].(time.Time); ok {
					sent[ev] = at
				}
			}
		case is(c, "outbox", binlog.Update) && eqStr(c.After["state"], evidence.StateClaimed):
			id, _ := vStr(c.After["claim_id"])
			at, ok := c.After["changed_at"].(time.Time)
			if !ok || !claimLike(c, id) {
				continue
			}
			i, seen := byTx[ch.tx]
			if !seen {
				i = len(rounds)
				byTx[ch.tx] = i
				rounds = append(rounds, claimRound{id: id, at: at, tx: ch.tx})
			}
			rounds[i].rows = append(rounds[i].rows, ev)
		}
	}
	return intents, rounds, sent
}

// idleBefore finds the claim id of rounds[i]'s previous round before at,
// and says whether that relay was idle at at: that round's rows all SENT
// by then, or the round older than its publish timeout plus
// spec.PublishRoundSlack; and no other round of it between at and
// rounds[i]. It returns the previous round's time.
func idleBefore(rounds []claimRound, i int, at time.Time, sent map[string]time.Time, timeoutMS int64) (time.Time, bool) {
	id := rounds[i].id
	for j := i - 1; j >= 0; j-- {
		r := rounds[j]
		if r.id != id {
			continue
		}
		if !r.at.Before(at) {
			return time.Time{}, false // a round of it after the insert, before this claim: busy
		}
		over := r.at.Add(time.Duration(timeoutMS)*time.Millisecond + spec.PublishRoundSlack)
		if !over.After(at) {
			return r.at, true
		}
		for _, ev := range r.rows {
			if t, ok := sent[ev]; !ok || t.After(at) {
				return time.Time{}, false
			}
		}
		return r.at, true
	}
	return time.Time{}, false // never claimed before: not known to be alive
}

// earlierSent tells whether every earlier version of in's aggregate was
// SENT before in's insert.
func earlierSent(intents []waitIntent, in waitIntent, sent map[string]time.Time) bool {
	for _, o := range intents {
		if o.aggregate != in.aggregate || o.version >= in.version {
			continue
		}
		if t, ok := sent[o.event]; !ok || t.After(in.at) {
			return false
		}
	}
	return true
}

// faultSpans are the times faults held the system: instants (an actor's
// fault point, a heal, a process_exit, a call_failed) and the nemesis's
// windows from its fault to its heal (open: to the end).
type faultSpans struct{ from, to []time.Time }

// faultTimes collects the scenario's fault spans from its events.
func (s *scenarioCheck) faultTimes() faultSpans {
	var f faultSpans
	for _, w := range s.kinds(evidence.KindFault, evidence.KindHeal, evidence.KindProcessExit, evidence.KindCallFailed) {
		e := w.e
		end := e.Time
		if e.Kind == evidence.KindFault && e.Actor == evidence.ActorNemesis && strings.HasPrefix(e.Point, spec.NemesisPrefix) {
			end = time.Time{} // open until its heal
			for _, h := range s.kinds(evidence.KindHeal) {
				if h.e.Point == e.Point && h.e.Target == e.Target && !h.e.Time.Before(e.Time) {
					end = h.e.Time
					break
				}
			}
		}
		f.from, f.to = append(f.from, e.Time), append(f.to, end)
	}
	return f
}

// faultMargin widens a judged interval on both sides when it is held
// against the fault spans: the actors' clock against the database's.
const faultMargin = time.Second

// within tells whether a fault span touches [from, to] widened by
// faultMargin.
func (f faultSpans) within(from, to time.Time) bool {
	from, to = from.Add(-faultMargin), to.Add(faultMargin)
	for i, start := range f.from {
		if end := f.to[i]; !start.After(to) && (end.IsZero() || !end.Before(from)) {
			return true
		}
	}
	return false
}
