package model

import (
	"cmp"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Actors log an action when its outcome is known: after the COMMIT
// returned. Another actor may act on what that transaction wrote before
// the first one's line is written (its answer slowed by the network, its
// process descheduled), so the merged log can show a claim of an intent
// before the order_committed that created it, or an inbox_reject before
// the inbox_insert it conflicted with. Both orders are possible in a
// correct system; the database saw the creation first. The model keeps
// such an event and waits for the event that explains it until the end of
// the scenario, which then reports what is still unexplained, at the
// event that needed it (unknown-intent, reject-without-inbox).

// logOrder is the Model's part for events that wait for their cause.
type logOrder struct {
	// provisional: intents created by a claim that came before their
	// order_committed (or outbox_written, seed_outbox), by event id.
	provisional map[string]waiting
	// waitingRejects: inbox_reject events with no inbox row yet, by inbox
	// key.
	waitingRejects map[inboxKey][]waiting
}

// waiting is an event that waits for its cause.
type waiting struct {
	src     Source
	message string
}

// provisionalIntent creates the outbox row a claim names before anything
// created it, to be confirmed by its creation (confirmIntent) before the
// end of the scenario.
func (m *Model) provisionalIntent(e *evidence.Event, src Source) *intent {
	if e.Kind != evidence.KindClaim || e.OrderID == nil {
		return nil
	}
	es := m.ev(e.EventID)
	es.hasRow = true
	es.aggregateID = *e.OrderID
	es.state = evidence.StatePending
	m.rows = append(m.rows, es)
	if m.provisional == nil {
		m.provisional = map[string]waiting{}
	}
	m.provisional[es.id] = waiting{src: src, message: string(e.Kind) + " of " + e.EventID +
		", an event id that no order_committed, seed_outbox or outbox_written created"}
	return es
}

// confirmIntent: the creation of an intent a claim made provisional; it
// returns the row (nil when eventID was not provisional).
func (m *Model) confirmIntent(eventID string, agg int64, src Source) *intent {
	if _, ok := m.provisional[eventID]; !ok {
		return nil
	}
	delete(m.provisional, eventID)
	es := m.byID[eventID]
	if agg != es.aggregateID {
		m.violate(RuleIntentMismatch, src, eventID, "the intent %s of aggregate %d was claimed before as aggregate %d",
			eventID, agg, es.aggregateID)
	}
	return es
}

// waitReject keeps an inbox_reject that has no inbox row yet.
func (m *Model) waitReject(k inboxKey, src Source, message string) {
	if m.waitingRejects == nil {
		m.waitingRejects = map[inboxKey][]waiting{}
	}
	m.waitingRejects[k] = append(m.waitingRejects[k], waiting{src: src, message: message})
}

// settleRejects: the inbox row of k was inserted; the rejects that came
// before its line are explained.
func (m *Model) settleRejects(k inboxKey) { delete(m.waitingRejects, k) }

// checkWaiting reports what is still unexplained at the end.
func (m *Model) checkWaiting(truncated bool) {
	ids := make([]string, 0, len(m.provisional))
	for id := range m.provisional {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmpSource(m.provisional[a].src, m.provisional[b].src) })
	for _, id := range ids {
		w := m.provisional[id]
		m.report(truncated, RuleUnknownIntent, w.src, id, "%s", w.message)
	}
	keys := make([]inboxKey, 0, len(m.waitingRejects))
	for k := range m.waitingRejects {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b inboxKey) int {
		return cmpSource(m.waitingRejects[a][0].src, m.waitingRejects[b][0].src)
	})
	for _, k := range keys {
		if m.inboxHas(k) {
			continue // an unknown commit of k turned out to have committed
		}
		for _, w := range m.waitingRejects[k] {
			m.report(truncated, RuleRejectWithoutInbox, w.src, k.eventID, "%s", w.message)
		}
	}
}

// cmpSource orders sources by log, then line.
func cmpSource(a, b Source) int {
	if c := strings.Compare(a.Log, b.Log); c != 0 {
		return c
	}
	return cmp.Compare(a.Line, b.Line)
}
