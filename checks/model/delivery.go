package model

import (
	"container/heap"
	"fmt"
	"slices"
	"strconv"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The delivery and effect layer (spec.LayerDelivery): what any outbox
// pipeline must obey, whatever its relay and its business. Intents exist
// before they are moved, every publish is one record, the records received
// are the records published, the inbox guards exactly one effect per
// event, and an offset is committed only past what was received and
// settled. The claim-token parts of a publish and a mark are in
// claimtoken.go.

// newIntent creates the outbox row of eventID, or records duplicate-intent
// and returns nil.
func (m *Model) newIntent(eventID string, agg int64, src Source) *intent {
	if es := m.confirmIntent(eventID, agg, src); es != nil {
		return es
	}
	es := m.ev(eventID)
	if es.hasRow {
		m.violate(RuleDuplicateIntent, src, eventID, "a second outbox intent with event_id %s: the unique key forbids it", eventID)
		return nil
	}
	es.hasRow = true
	es.aggregateID = agg
	es.state = evidence.StatePending
	m.rows = append(m.rows, es)
	return es
}

// intentFor returns the intent an event names, or records unknown-intent.
func (m *Model) intentFor(e *evidence.Event, src Source) *intent {
	in := m.intentOf(e.EventID)
	if in == nil {
		in = m.provisionalIntent(e, src) // a claim may come before its creation's line (logorder.go)
	}
	if in == nil {
		m.violate(RuleUnknownIntent, src, e.EventID,
			"%s of %s, an event id that no order_committed, seed_outbox or outbox_written created", e.Kind, e.EventID)
		return nil
	}
	if e.OrderID != nil && *e.OrderID != in.aggregateID {
		m.violate(RuleIntentMismatch, src, e.EventID,
			"%s of %s says order %d, the intent's aggregate is %d", e.Kind, e.EventID, *e.OrderID, in.aggregateID)
	}
	return in
}

// oneRow: event_id is the outbox's unique key, so an UPDATE by event id
// changes at most one row.
func (m *Model) oneRow(e *evidence.Event, rows int64, src Source) {
	if rows > 1 {
		m.violate(RuleImpossibleRows, src, e.EventID, "%s of %s reports %d rows; an update by the unique event_id changes at most 1",
			e.Kind, e.EventID, rows)
	}
}

// stepPublish: the broker acknowledged (or refused) a record of an intent.
func (m *Model) stepPublish(e *evidence.Event, src Source) {
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	ts := m.publishedWith(in, e, src)
	if e.Partition == nil || e.Offset == nil {
		m.refusedPublishes++
		ts.Refused, ts.LastPublish = true, OutcomeRefused
		return // refused by the broker: no record
	}
	ts.LastPublish = OutcomeAcked
	// Keys stored in maps must own their bytes: assigning to an existing
	// string key replaces the stored key, and a substring of a decoded
	// batch would keep the whole batch alive.
	k := recordKey{m.intern(e.Topic), *e.Partition, *e.Offset}
	r, seen := m.records[k]
	if !seen {
		m.recordOrder = append(m.recordOrder, k)
	}
	if r.publishd {
		m.violate(RuleDuplicateRecord, src, e.EventID, "a second record at %s/%d@%d: the broker assigns an offset once",
			e.Topic, *e.Partition, *e.Offset)
		return
	}
	if r.fromUnknown {
		// Received while this publish was in flight, and taken then for
		// the record of an earlier publish of unknown outcome: it is this
		// one's, and that unknown publish's record is still to be found.
		r.fromUnknown = false
		in.unknownOpen++
	}
	r.publishd = true
	r.pub = in
	if r.rec != nil && r.rec != in {
		m.violate(RuleRecordMismatch, src, e.EventID, "record %s/%d@%d was received as %s but published as %s",
			e.Topic, *e.Partition, *e.Offset, r.rec.id, in.id)
	}
	m.records[k] = r
	ts.Published = true
	m.knownRecord(k)
	m.aggregatePartition(in.aggregateID, k, in.id, src)
}

// stepPublishUnknown: a publish whose outcome the relay cannot know; the
// broker may hold one record of it, which a later receive may show.
func (m *Model) stepPublishUnknown(e *evidence.Event, src Source) {
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	ts := m.publishedWith(in, e, src)
	ts.Unknown, ts.LastPublish = true, OutcomeUnknown
	m.unknownPublishes++
	in.unknownOpen++
}

// publishedWith checks what a publish (of any outcome) says of its token
// (publish-without-claim, claimtoken.go) and of its record
// (recordIdentity), and returns the token's state.
func (m *Model) publishedWith(in *intent, e *evidence.Event, src Source) *Token {
	m.recordIdentity(in, e, src)
	if ts := m.publishToken(in, e, src); ts != nil {
		m.publishInTime(ts, e, src)
		return ts
	}
	return in.addToken(val(e.ClaimVersion), m.intern(e.ClaimID))
}

// recordIdentity: the record a publish sent carries its intent's identity,
// key = the aggregate id in decimal and event_id header = the intent's
// event id (publish-key-mismatch, publish-event-id-mismatch). A publish
// that says neither is not checked: a relay that does not record them
// cannot be told from a record without key and header.
func (m *Model) recordIdentity(in *intent, e *evidence.Event, src Source) {
	if e.RecordKey == "" && e.RecordEventID == "" {
		return
	}
	if want := strconv.FormatInt(in.aggregateID, 10); e.RecordKey != want {
		m.violate(RulePublishKeyMismatch, src, e.EventID, "%s of %s sent a record with key %q; the key of aggregate %d is %q",
			e.Kind, e.EventID, e.RecordKey, in.aggregateID, want)
	}
	if e.RecordEventID != in.id {
		m.violate(RulePublishEventIDMismatch, src, e.EventID, "%s of %s sent a record with event_id header %q: the inbox will take it for another event",
			e.Kind, e.EventID, e.RecordEventID)
	}
}

// stepMark: the update to SENT returned rows. Whatever the relay, SENT
// needs an earlier publish of the claim that marks (sent-without-publish),
// the last of which the broker acknowledged (mark-after-failed-publish);
// whether that claim is still the row's is the claim-token layer's
// (markToken).
func (m *Model) stepMark(e *evidence.Event, src Source) {
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	rows := val(e.Rows)
	version := val(e.ClaimVersion)
	ts := in.addToken(version, m.intern(e.ClaimID))
	ts.Marked, ts.MarkRows, ts.MarkAt = true, rows, m.events
	m.oneRow(e, rows, src)
	if rows < 1 {
		return
	}
	m.markToken(in, e, rows, src)
	switch {
	case ts.failed():
		m.marksAfterFailure++
		what := "refused by the broker"
		if ts.LastPublish == OutcomeUnknown {
			what = "of unknown outcome"
		}
		m.violate(RuleMarkAfterFailedPublish, src, e.EventID,
			"mark of %s to SENT with token v%d/%s after its last publish was %s: it must be retried, not marked", e.EventID, version, e.ClaimID, what)
	case !ts.Published:
		m.violate(RuleSentWithoutPublish, src, e.EventID,
			"mark of %s to SENT with token v%d/%s before any publish of that claim", e.EventID, version, e.ClaimID)
	}
	if !in.sent {
		in.sent, in.sentVersion = true, in.claimVersion
	}
	in.state = evidence.StateSent
}

// stepReceive: the consumer received a record from the broker.
func (m *Model) stepReceive(e *evidence.Event, src Source) {
	k := recordKey{m.intern(e.Topic), val(e.Partition), val(e.Offset)}
	r, seen := m.records[k]
	if !seen {
		m.recordOrder = append(m.recordOrder, k)
	}
	es := m.ev(e.EventID)
	newRecord := r.received == 0
	if r.received > 0 {
		m.replays++
	} else {
		r.rec = es
		r.recvLog, r.recvLine, r.recvSeq = src.Log, src.Line, src.Seq
		es.deliveries++
		m.received++
		if !r.publishd {
			m.receivedUnpublished(&r, es, e, k, src)
			m.knownRecord(k)
			if agg, ok := aggregateOf(es, e); ok {
				m.aggregatePartition(agg, k, es.id, src)
			}
		}
	}
	r.received++
	m.records[k] = r
	if r.publishd && r.pub != es {
		m.violate(RuleRecordMismatch, src, e.EventID, "record %s/%d@%d was published as %s but received as %s",
			e.Topic, k.partition, k.offset, r.pub.id, e.EventID)
	} else if r.rec != es {
		m.violate(RuleRecordMismatch, src, e.EventID, "record %s/%d@%d was received as %s and as %s",
			e.Topic, k.partition, k.offset, r.rec.id, e.EventID)
	}
	if es.hasRow && e.OrderID != nil && *e.OrderID != es.aggregateID {
		m.violate(RuleIntentMismatch, src, e.EventID, "receive of %s says order %d, the intent's aggregate is %d",
			e.EventID, *e.OrderID, es.aggregateID)
	}
	group := m.intern(e.Consumer)
	gi := slices.Index(m.groups, group)
	if gi < 0 && len(m.groups) < maxGroups {
		gi = len(m.groups)
		m.groups = append(m.groups, group)
	}
	if gi >= 0 {
		first := r.groups&(1<<gi) == 0
		r.groups |= 1 << gi
		m.records[k] = r
		m.receivedBy(group, first, newRecord && es.deliveries == 1, es, k, src)
	}
	m.memberReceived(e.Actor, group, es, k)
	pk := pendingKey{group, k}
	if _, ok := m.pending[pk]; !ok {
		pp := partKey{group, k.topic, k.partition}
		h := m.pendingHeaps[pp]
		if h == nil {
			h = &offsetHeap{}
			m.pendingHeaps[pp] = h
		}
		heap.Push(h, k.offset)
		r.rec.pending = append(r.rec.pending, pk)
	}
	m.pending[pk] = pendingRec{ev: r.rec, src: src}
}

// receivedUnpublished: a record received that no publish produced yet
// comes from a publish of its event id still in flight (claimed, its
// outcome not recorded yet) or of unknown outcome (each accounts for at
// most one record); otherwise the receive preceded any publish
// (receive-before-publish). An event id without claims (a relay without
// claim tokens, an id no intent has) cannot be known to have a publish in
// flight: the end of the scenario decides (checkReceived).
func (m *Model) receivedUnpublished(r *record, es *eventState, e *evidence.Event, k recordKey, src Source) {
	if es.unknownOpen > 0 {
		es.unknownOpen--
		r.fromUnknown = true
		return
	}
	claimed := false
	for i := range es.tokens {
		t := &es.tokens[i]
		if t.Claimed && t.LastPublish == OutcomeNone {
			return
		}
		claimed = claimed || t.Claimed
	}
	if !claimed {
		return
	}
	r.reported = true
	m.violate(RuleReceiveBeforePublish, src, e.EventID,
		"record %s/%d@%d (%s) was received before any publish produced it, while every claim of %s had recorded its publish outcome",
		k.topic, k.partition, k.offset, e.EventID, e.EventID)
}

// inboxRecord: an inbox decision names the record it was made for, which
// its consumer must have received with that event id. (rec is set by a
// record's first receive: nil for a record never received or unknown.)
func (m *Model) inboxRecord(e *evidence.Event, src Source) {
	r := m.records[recordKey{e.Topic, val(e.Partition), val(e.Offset)}]
	if r.rec == nil || r.rec.id != e.EventID {
		m.violate(RuleInboxRecordMismatch, src, e.EventID,
			"%s of %s names record %s/%d@%d, which was not received with that event id", e.Kind, e.EventID,
			e.Topic, val(e.Partition), val(e.Offset))
	}
}

// stepInboxInsert: the effect transaction committed an inbox row.
func (m *Model) stepInboxInsert(e *evidence.Event, src Source) {
	m.inboxRecord(e, src)
	m.noteInboxUser(e)
	k := m.inboxKeyOf(e, src)
	// The unknown commits of k did not commit: the row was free.
	m.decidedCommits += int64(m.openCommits[k])
	delete(m.openCommits, k)
	if _, dup := m.inbox[k]; dup {
		m.violate(RuleDuplicateInbox, src, e.EventID,
			"a second inbox row for (%s, %s): the unique key forbids it", e.Consumer, k.eventID)
		return
	}
	m.inbox[k] = struct{}{}
	m.inboxOrder = append(m.inboxOrder, k)
	m.inboxTx(k, e.TrxID)
	m.settleRejects(k)
}

// stepInboxReject: the inbox's unique key rejected a duplicate; the
// record is settled without an effect.
func (m *Model) stepInboxReject(e *evidence.Event, src Source) {
	m.inboxRecord(e, src)
	if k := m.inboxKeyOf(e, src); !m.inboxHas(k) {
		// Its inbox_insert may come later in the merged logs (logorder.go).
		m.waitReject(k, src, fmt.Sprintf("inbox_reject of (%s, %s) with no inbox row to conflict with", e.Consumer, k.eventID))
	}
	es := m.ev(e.EventID)
	es.rejects++
	m.rejects++
	if i := m.noteInboxUser(e); i >= 0 {
		m.inboxCounts[i].rejects++
	}
	rec := recordKey{e.Topic, val(e.Partition), val(e.Offset)}
	cur := m.cur[e.Actor]
	for _, g := range m.groups {
		if !cur.ok || g == cur.group { // another group's receive of the record is not settled by it
			delete(m.pending, pendingKey{g, rec})
		}
	}
	es.pending = slices.DeleteFunc(es.pending, func(pk pendingKey) bool { _, p := m.pending[pk]; return !p })
	m.settle(e.Actor, rec, es.id, src)
}

// stepEffect: the effect transaction committed a notification; the
// event's received records are settled.
func (m *Model) stepEffect(e *evidence.Event, src Source) {
	es := m.ev(e.EventID)
	consumer := m.intern(e.Consumer)
	ik := inboxKey{consumer, es.id}
	if _, ok := m.inbox[ik]; !ok {
		m.violate(RuleEffectWithoutInbox, src, e.EventID,
			"effect for %s committed with no inbox row for (%s, %s)", e.EventID, e.Consumer, e.EventID)
	}
	m.effectTx(e, ik, src)
	m.effectVersion(consumer, es, src)
	if c := m.cur[e.Actor]; c.ok && c.eventID == es.id {
		m.settle(e.Actor, c.rec, es.id, src)
	}
	es.effects++
	m.consumerEffect(consumer, es, src)
	nid := val(e.NotificationID)
	if m.notifIDs[nid] {
		m.violate(RuleDuplicateNotification, src, e.EventID, "notification id %d recorded twice", nid)
	} else {
		m.notifIDs[nid] = true
		m.notifs = append(m.notifs, notification{id: nid, consumer: consumer, eventID: es.id, orderID: val(e.OrderID)})
	}
	if es.hasRow && e.OrderID != nil && *e.OrderID != es.aggregateID {
		m.violate(RuleIntentMismatch, src, e.EventID, "effect for %s says order %d, the intent's aggregate is %d",
			e.EventID, *e.OrderID, es.aggregateID)
	}
	// The effect settles the event's records received in its member's
	// group (in every group when the member received nothing): another
	// consumer group owes its own effect.
	cur := m.cur[e.Actor]
	kept := es.pending[:0]
	for _, pk := range es.pending {
		if cur.ok && pk.group != cur.group {
			kept = append(kept, pk)
			continue
		}
		delete(m.pending, pk)
	}
	es.pending = kept
}

// stepOffsetCommit: a consumer group committed offset n (the next to
// read) of a partition: it must have received record n-1, and every record
// below n it received must be settled (effect or inbox_reject).
func (m *Model) stepOffsetCommit(e *evidence.Event, src Source) {
	m.noteCommit(e)
	m.noteCommitOwner(e) // ownership.go
	next := val(e.Offset)
	m.commitOffsets(e.Actor, m.intern(e.Consumer), m.intern(e.Topic), val(e.Partition), next, src)
	if next > 0 {
		r := m.records[recordKey{e.Topic, val(e.Partition), next - 1}]
		gi := slices.Index(m.groups, e.Consumer)
		if gi < 0 || r.groups&(1<<gi) == 0 {
			m.violate(RuleOffsetNotReceived, src, "",
				"group %s committed offset %d of %s/%d, but never received the record at offset %d",
				e.Consumer, next, e.Topic, val(e.Partition), next-1)
		}
	}
	pp := partKey{e.Consumer, e.Topic, val(e.Partition)}
	h := m.pendingHeaps[pp]
	if h == nil {
		return
	}
	for h.Len() > 0 && (*h)[0] < next {
		off := heap.Pop(h).(int64)
		pk := pendingKey{pp.group, recordKey{pp.topic, pp.partition, off}}
		p, ok := m.pending[pk]
		if !ok {
			continue // settled
		}
		delete(m.pending, pk)
		m.violate(RuleOffsetBeforeEffect, src, p.ev.id,
			"offset %d committed for %s/%d (group %s) before the effect or inbox_reject of the record at offset %d (%s, received at %s)",
			next, pp.topic, pp.partition, pp.group, off, p.ev.id, p.src)
	}
}
