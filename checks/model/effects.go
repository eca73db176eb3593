package model

import (
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The consumer's effect transaction (delivery layer): the inbox row and
// the notification are written by one transaction (effect-outside-inbox-tx,
// when both events name the transaction), the inbox row is keyed by the
// record's event id and nothing else (dedupe-wrong-key), and a
// transaction that failed (effect_rolled_back) or whose COMMIT went
// unanswered (commit_unknown) settles nothing: its record must be
// replayed before an offset passes it.

// inboxKeyOf returns the inbox row an inbox event names: (consumer,
// inbox_key), inbox_key defaulting to the event id. A key other than the
// event id is dedupe-wrong-key: the inbox would take two events for one
// (a key shared by an aggregate's events) or one event for two (a key
// per record, which a duplicate record does not share).
func (m *Model) inboxKeyOf(e *evidence.Event, src Source) inboxKey {
	es := m.ev(e.EventID)
	k := inboxKey{m.intern(e.Consumer), es.id}
	if e.InboxKey != "" && e.InboxKey != e.EventID {
		m.violate(RuleDedupeWrongKey, src, e.EventID,
			"%s of %s by %s is keyed %q, not the event id: the inbox dedupes on the event id only", e.Kind, e.EventID, e.Consumer, e.InboxKey)
		k.eventID = m.ev(e.InboxKey).id
	}
	return k
}

// inboxTx notes the transaction that wrote an inbox row.
func (m *Model) inboxTx(k inboxKey, trx string) {
	if trx != "" {
		m.inboxTrx[k] = m.intern(trx)
	}
}

// effectTx: the notification is written by the transaction that wrote
// its inbox row (effect-outside-inbox-tx), when both events say which.
func (m *Model) effectTx(e *evidence.Event, k inboxKey, src Source) {
	if e.TrxID == "" {
		return
	}
	if trx, ok := m.inboxTrx[k]; ok && trx != e.TrxID {
		m.violate(RuleEffectOutsideInboxTx, src, e.EventID,
			"effect for %s committed by transaction %s, its inbox row by transaction %s: a failure between the two keeps the row and loses the effect",
			e.EventID, e.TrxID, trx)
	}
}

// stepEffectRolledBack: the effect transaction failed and rolled back as
// a whole; the record it was for stays unsettled.
func (m *Model) stepEffectRolledBack(e *evidence.Event, src Source) {
	m.inboxRecord(e, src)
	m.noteInboxUser(e)
	m.rolledBackEffects++
}

// stepCommitUnknown: the effect transaction's COMMIT went unanswered. Its
// record stays unsettled; until a replay decides, its inbox row may
// exist, so a later inbox_reject without a recorded row is that row
// (not reject-without-inbox).
func (m *Model) stepCommitUnknown(e *evidence.Event, src Source) {
	m.inboxRecord(e, src)
	m.noteInboxUser(e)
	m.unknownCommits++
	m.openCommits[inboxKey{m.intern(e.Consumer), m.ev(e.EventID).id}]++
}
