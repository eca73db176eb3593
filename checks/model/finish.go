package model

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// End-of-scenario checks: rules that only the whole history can decide.

// Finish runs the end-of-scenario checks. truncated says that a log of the
// scenario was cut: a missing cause may then be in the lost tail, so those
// findings are inconclusive rather than failures.
func (m *Model) Finish(truncated bool) {
	m.checkObserved(truncated)
	m.checkStock(truncated)
	m.checkReceived(truncated)
	m.checkAnswers(truncated)
	m.checkContract(truncated)
	m.checkOffsets(truncated)
	m.checkWaiting(truncated)
	m.finishChaos()
}

// checkObserved (delivery, harness): every observation is of a row in a
// state and claim_version it held (observe-mismatch).
func (m *Model) checkObserved(truncated bool) {
	for _, es := range m.rows {
		if es.observed == nil {
			continue
		}
		for _, o := range es.all {
			if why := es.neverHeld(o.Observation); why != "" {
				m.report(truncated, RuleObserveMismatch, o.src, es.id, "observed %s v%d of %s, but %s", o.State, o.ClaimVersion, es.id, why)
			}
		}
	}
	for id, es := range m.byID {
		if es.hasRow || es.observed == nil {
			continue
		}
		for _, o := range es.all {
			m.report(truncated, RuleObserveMismatch, o.src, id, "observed %s, a row that never existed", id)
			break // one finding per event id
		}
	}
}

// neverHeld says why a row never was in the observed state ("" when it was).
func (es *eventState) neverHeld(o Observation) string {
	if o.OrderID != nil && *o.OrderID != es.aggregateID {
		return fmt.Sprintf("its aggregate is %d, not %d", es.aggregateID, *o.OrderID)
	}
	if es.observed != nil && es.seeded != nil && o.State == es.seeded.State && o.ClaimVersion == es.seeded.ClaimVersion {
		return ""
	}
	switch o.State {
	case evidence.StatePending:
		if es.seeded == nil && o.ClaimVersion == 0 {
			return ""
		}
	case evidence.StateClaimed:
		for _, t := range es.tokens {
			if t.Claimed && t.Version == o.ClaimVersion {
				return ""
			}
		}
	case evidence.StateSent:
		if es.sent && es.sentVersion == o.ClaimVersion {
			return ""
		}
	}
	return "no event put the row in that state with that claim_version"
}

// checkStock (business): each order that decremented a SKU left stock =
// the stock before it minus its quantity (stock-mismatch). Orders are put
// in decrement order by their stock (concurrent requests may log in
// another order than they committed).
func (m *Model) checkStock(truncated bool) {
	for _, sku := range m.skus {
		ds := m.decrements[sku]
		if len(ds) == 0 {
			continue
		}
		slices.SortStableFunc(ds, func(a, b decrement) int { return cmp.Compare(b.stock, a.stock) })
		left := m.seedStock[sku]
		for _, d := range ds {
			if d.stock != left-d.quantity {
				m.report(truncated, RuleStockMismatch, d.src, "",
					"an order of %d %s left stock %d, but the stock before it was %d", d.quantity, sku, d.stock, left)
				break
			}
			left = d.stock
		}
	}
}

// checkReceived (delivery): every record received was published
// (receive-without-publish), or taken as the record of a publish of
// unknown outcome: one logged so, or one that was in flight when its
// relay's process died (a claim whose holder ended, not cleanly, before
// logging a publish with it: SIGKILL can fall between the broker's
// append and the line that says so). A record is made by a publish or a
// receive, so one that was not published was received; one already
// reported receive-before-publish is not reported again.
func (m *Model) checkReceived(truncated bool) {
	for _, k := range m.recordOrder {
		r := m.records[k]
		if !r.publishd && !r.fromUnknown && !r.reported && r.rec.unknownOpen > 0 {
			// Received while a publish of its event was in flight, which
			// later proved of unknown outcome: that publish's record.
			r.rec.unknownOpen--
			continue
		}
		if !r.publishd && !r.fromUnknown && !r.reported && m.diedHolding(r.rec) {
			continue
		}
		if !r.publishd && !r.fromUnknown && !r.reported {
			m.report(truncated, RuleReceiveWithoutPublish, Source{Log: r.recvLog, Line: r.recvLine, Seq: r.recvSeq}, r.rec.id,
				"record %s/%d@%d (%s) was received but no publish produced it", k.topic, k.partition, k.offset, r.rec.id)
		}
	}
}

// Release drops what only the replay and Finish need (the broker records,
// pending offsets, stock decrements, notification ids), so that the SQL
// load and the digests that follow do not run on top of it: for a million
// events that is about 40 MB less live heap, and twice that less peak
// (GOGC=100). The model must not be stepped or finished again.
func (m *Model) Release() {
	m.records, m.recordOrder = nil, nil
	m.pending, m.pendingHeaps = nil, nil
	m.decrements = nil
	m.notifIDs = nil
	m.consumerState = consumerState{lag: m.lag, splitAggregates: m.splitAggregates, effectsOutOfOrder: m.effectsOutOfOrder, partitions: m.partitions,
		receivesOutOfVersion: m.receivesOutOfVersion,
		rolledBackEffects:    m.rolledBackEffects, unknownCommits: m.unknownCommits, resolvedCommits: m.resolvedCommits, decidedCommits: m.decidedCommits,
		faultCommit: m.faultCommit, members: m.members, memberOrder: m.memberOrder}
	m.inboxTrx, m.openCommits = nil, nil
}

// diedHolding takes, for a record no publish explains, a token of its
// event whose holder's process died before logging any publish with it:
// that publish was in flight, and its outcome is this record. Each such
// token explains one record.
func (m *Model) diedHolding(es *eventState) bool {
	for i := range es.tokens {
		t := &es.tokens[i]
		if t.Claimed && !t.DiedHolding && t.LastPublish == OutcomeNone && !t.Published && !t.Refused && m.crashed[t.Holder] {
			t.DiedHolding = true
			return true
		}
	}
	return false
}
