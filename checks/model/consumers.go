package model

import (
	"math/bits"
	"slices"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Inbox consumers (delivery layer): each inbox consumer (the consumer
// column of its inbox and notification rows, the consumer of its inbox,
// effect, effect_rolled_back and commit_unknown events) dedupes on its own
// inbox rows and owes its own effect of every event, so that two
// consumers of one topic (two groups, two inbox names) make two effects of
// an event, one each. A consumer ran when an event of its names it: one
// that rejected every record and wrote nothing still ran.

// inboxUser is what one inbox consumer did.
type inboxUser struct {
	effects, rejects int64
}

// inboxIndex returns the index of inbox consumer name in m.inboxNames,
// adding it; -1 past maxGroups names (then its effects are told apart
// from other consumers' by none: duplicate-effect counts them per event).
func (m *Model) inboxIndex(name string) int {
	i := slices.Index(m.inboxNames, name)
	if i < 0 && len(m.inboxNames) < maxGroups {
		i = len(m.inboxNames)
		m.inboxNames = append(m.inboxNames, m.intern(name))
		m.inboxCounts = append(m.inboxCounts, inboxUser{})
	}
	return i
}

// noteInboxUser records that the consumer of an inbox-side event ran.
func (m *Model) noteInboxUser(e *evidence.Event) int { return m.inboxIndex(e.Consumer) }

// consumerEffect counts an effect of es by consumer and reports a second
// one of the same consumer: exactly one effect per event and consumer.
func (m *Model) consumerEffect(consumer string, es *eventState, src Source) {
	i := m.inboxIndex(consumer)
	if i < 0 {
		// Past the cap: one effect per event, whoever made it.
		if es.effects > int32(bits.OnesCount64(es.effectBy))+1 {
			m.violate(RuleDuplicateEffect, src, es.id, "effect #%d for %s: the business effect happened more than once", es.effects, es.id)
		}
		return
	}
	m.inboxCounts[i].effects++
	if es.effectBy&(1<<i) != 0 {
		m.violate(RuleDuplicateEffect, src, es.id, "a second effect for %s by consumer %s: its business effect happened more than once",
			es.id, consumer)
		return
	}
	es.effectBy |= 1 << i
}

// InboxConsumer is what one inbox consumer did, as the events say.
type InboxConsumer struct {
	Name    string
	Effects int64 // effect events
	Rejects int64 // inbox_reject events
}

// InboxConsumers returns the inbox consumers that ran (an inbox, effect,
// effect_rolled_back or commit_unknown event names them), in the order
// first seen, at most 64.
func (m *Model) InboxConsumers() []InboxConsumer {
	out := make([]InboxConsumer, len(m.inboxNames))
	for i, n := range m.inboxNames {
		out[i] = InboxConsumer{Name: n, Effects: m.inboxCounts[i].effects, Rejects: m.inboxCounts[i].rejects}
	}
	return out
}

// EffectBy tells whether inbox consumer name made an effect of event id.
func (m *Model) EffectBy(name, id string) bool {
	i := slices.Index(m.inboxNames, name)
	return i >= 0 && m.stateOf(id).effectBy&(1<<i) != 0
}
