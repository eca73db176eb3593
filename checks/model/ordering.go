package model

import (
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Per-key order (delivery layer): the records of one aggregate share one
// partition, so that the broker keeps them in order, and the consumer
// receives and applies them in the order of their aggregate_version. A
// group that goes back to an older version of an aggregate it has already
// moved past, or applies one after a newer one, breaks that order; a
// replay of a record already received does not (the inbox absorbs it).

// aggKey names an aggregate as seen by a group (receives) or by an inbox
// consumer (effects).
type aggKey struct {
	who string
	agg int64
}

// versionOf returns the aggregate version of event es (1 when no
// order_advanced said otherwise: an order's placement).
func (es *eventState) versionOf() int64 {
	if es.version > 0 {
		return int64(es.version)
	}
	return 1
}

// aggregateOf returns the aggregate of the record of es: its intent's
// aggregate id, else the order id the event names; ok is false when
// neither is known.
func aggregateOf(es *eventState, e *evidence.Event) (int64, bool) {
	if es.hasRow {
		return es.aggregateID, !es.decoy
	}
	if e.OrderID != nil {
		return *e.OrderID, true
	}
	return 0, false
}

// aggregatePartition: the records of one aggregate on one topic share
// one partition (aggregate-on-two-partitions). The partition is kept on
// the aggregate's order (so an aggregate without an order_committed is not
// checked), for the first topic its records were seen on.
func (m *Model) aggregatePartition(agg int64, k recordKey, eventID string, src Source) {
	i, ok := m.orderIdx[agg]
	if !ok {
		return
	}
	for len(m.orderParts) <= int(i) {
		m.orderParts = append(m.orderParts, orderPart{})
	}
	o := &m.orderParts[i]
	switch {
	case o.topic == "":
		o.topic, o.partition = k.topic, k.partition
	case o.topic != k.topic || o.partition == k.partition:
	default:
		if !o.split {
			o.split = true
			m.splitAggregates++
		}
		m.violate(RuleAggregateOnTwoPartitions, src, eventID,
			"record %s/%d@%d of order %d (%s) is on partition %d, an earlier record of that order on partition %d: "+
				"the broker keeps no order between partitions", k.topic, k.partition, k.offset, agg, eventID, k.partition, o.partition)
	}
}

// receiveVersion: a group's receive of an aggregate's new event must not
// go back to a version below one it already received
// (receive-out-of-version). Only aggregates with a version above 1 are
// remembered.
func (m *Model) receiveVersion(group string, es *eventState, agg int64, src Source) {
	v := es.versionOf()
	k := aggKey{group, agg}
	top, ok := m.recvVersion[k]
	if ok && v < top {
		m.receivesOutOfVersion++
		m.violate(RuleReceiveOutOfVersion, src, es.id,
			"group %s received %s (version %d of order %d) after version %d of that order: receipts must follow aggregate_version",
			group, es.id, v, agg, top)
	}
	if v > top && (ok || v > 1) {
		m.recvVersion[k] = v
	}
}

// effectVersion: an inbox consumer applies an aggregate's events in the
// order of their versions: an effect after an effect of a higher version
// of its aggregate is out of order (effect-out-of-order).
func (m *Model) effectVersion(consumer string, es *eventState, src Source) {
	if !es.hasRow || es.decoy {
		return
	}
	v := es.versionOf()
	k := aggKey{consumer, es.aggregateID}
	top, ok := m.effVersion[k]
	if ok && v < top {
		m.effectsOutOfOrder++
		m.violate(RuleEffectOutOfOrder, src, es.id,
			"effect for %s (version %d of order %d) committed after the effect of version %d: effects must follow aggregate_version",
			es.id, v, es.aggregateID, top)
	}
	if v > top && (ok || v > 1) {
		m.effVersion[k] = v
	}
}

// receiveOffset: a group receives the records of a partition it has not
// received yet in offset order (receive-out-of-order): a first receive
// below an offset the group already received means that a polled batch was
// handled out of order (a replay from the committed offset receives
// records the group had, which is not a first receive).
func (m *Model) receiveOffset(gp *groupPart, group string, k recordKey, eventID string, src Source) {
	if gp.hasRecv && k.offset < gp.maxRecv {
		m.violate(RuleReceiveOutOfOrder, src, eventID,
			"group %s received %s/%d@%d (%s), a record it had not received, after offset %d: records must be handled in offset order",
			group, k.topic, k.partition, k.offset, eventID, gp.maxRecv)
	}
	if !gp.hasRecv || k.offset > gp.maxRecv {
		gp.maxRecv, gp.hasRecv = k.offset, true
	}
}

// stepOrderAdvanced: an order moved on to its next status, and the
// intent of that change was written in the same transaction (business
// layer: the order service's writes and its event id convention).
func (m *Model) stepOrderAdvanced(e *evidence.Event, src Source) {
	id := val(e.OrderID)
	v := val(e.AggregateVersion)
	var orders, outbox bool
	for _, w := range e.Writes {
		orders = orders || w == evidence.WriteOrders
		outbox = outbox || w == evidence.WriteOutbox
	}
	if !orders || !outbox {
		m.violate(RuleIntentOutsideOrderTx, src, e.EventID,
			"order %d advanced to %s without its row and its intent in one transaction (writes %v)", id, e.OrderStatus, e.Writes)
	}
	if want := evidence.EventIDForVersion(id, v); e.EventID != want {
		m.violate(RuleIntentIDMismatch, src, e.EventID, "order %d advanced with intent %q, want %q (version %d)", id, e.EventID, want, v)
	}
	if !outbox {
		return
	}
	if in := m.newIntent(e.EventID, id, src); in != nil {
		in.version = int32(min(max(v, 1), 1<<30))
	}
}

// receivedBy checks a group's receive of record k (first: the group had
// not received it before; newEvent: no record of its event was received
// before) against the group's earlier receives: in offset order, and, for
// a new event, in version order for its aggregate (a duplicate record of
// an older version, which the inbox absorbs, is not out of version).
func (m *Model) receivedBy(group string, first, newEvent bool, es *eventState, k recordKey, src Source) {
	gp := m.groupPartOf(group, k.topic, k.partition)
	gp.lastSrc = src
	if !first {
		return
	}
	m.receiveOffset(gp, group, k, es.id, src)
	if newEvent && es.hasRow && !es.decoy {
		m.receiveVersion(group, es, es.aggregateID, src)
	}
}
