package model

import (
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The business layer (spec.LayerBusiness): what this project's order
// service must obey. One transaction writes the stock decrement, the
// order, its line, the idempotency record and the outbox intent
// e-<order_id>. Its events also create the intents the delivery layer
// follows, and the orders, stock and answers the U79 metrics count, so
// they are folded whatever the layers; with this layer off only its rules
// go unreported. The stock-mismatch check runs at the end (finish.go).

// stepOrderCommitted: the order transaction committed.
func (m *Model) stepOrderCommitted(e *evidence.Event, src Source) {
	m.request(e)
	id := val(e.OrderID)
	var row, lines, idem, stock, outbox bool
	for _, w := range e.Writes {
		switch w {
		case evidence.WriteOrders:
			row = true
		case evidence.WriteOrderLines:
			lines = true
		case evidence.WriteIdempotency:
			idem = true
		case evidence.WriteStock:
			stock = true
		case evidence.WriteOutbox:
			outbox = true
		}
	}
	if !outbox {
		m.violate(RuleIntentOutsideOrderTx, src, e.EventID,
			"order %d committed without its outbox intent in the same transaction (writes %v)", id, e.Writes)
	}
	if e.EventID != evidence.EventIDFor(id) {
		m.violate(RuleIntentIDMismatch, src, e.EventID, "order %d committed intent %q, want %q", id, e.EventID, evidence.EventIDFor(id))
	}
	if _, dup := m.orderIdx[id]; dup {
		m.violate(RuleDuplicateOrder, src, e.EventID, "order %d committed twice", id)
		return
	}
	sku := m.intern(e.SKU)
	m.orderIdx[id] = int32(len(m.orders))
	m.orders = append(m.orders, Order{ID: id, SKU: sku, Quantity: val(e.Quantity), Key: strings.Clone(e.Key), Status: int64(e.Status),
		Row: row, Lines: lines, Idem: idem})
	if stock {
		// Concurrent orders may log in another order than they committed:
		// the stock left is the lowest any of them reported.
		left := val(e.Stock)
		if cur, ok := m.stock[sku]; ok {
			m.stock[sku] = min(cur, left)
		} else {
			m.stock[sku] = left
		}
		if _, seeded := m.seedStock[sku]; seeded && len(m.decrements[sku]) < maxDecrements {
			m.decrements[sku] = append(m.decrements[sku], decrement{stock: left, quantity: val(e.Quantity), src: src})
		}
	}
	if outbox {
		m.setKeyIntent(m.newIntent(e.EventID, id, src))
	}
}

// stepOutboxWritten: an intent committed in a transaction of its own,
// after its order: the order service broke the outbox pattern.
func (m *Model) stepOutboxWritten(e *evidence.Event, src Source) {
	m.violate(RuleIntentOutsideOrderTx, src, e.EventID,
		"the intent %s of order %d was committed in a transaction of its own, after the order", e.EventID, val(e.OrderID))
	m.setKeyIntent(m.newIntent(e.EventID, val(e.OrderID), src))
}

// stepOrderRolledBack: the order transaction failed and was rolled back.
func (m *Model) stepOrderRolledBack(e *evidence.Event, src Source) {
	if e.EventID != "" && len(m.rolledBack) < maxRolledBack {
		m.rolledBack = append(m.rolledBack, strings.Clone(e.EventID))
	}
	if e.OrderID != nil && e.EventID != "" && e.EventID != evidence.EventIDFor(*e.OrderID) {
		m.violate(RuleIntentIDMismatch, src, e.EventID, "order %d tried to write intent %q, want %q",
			*e.OrderID, e.EventID, evidence.EventIDFor(*e.OrderID))
	}
	m.request(e)
}

// stepOrderAnswered: an idempotent replay or a refused request, without
// writes.
func (m *Model) stepOrderAnswered(e *evidence.Event, _ Source) { m.request(e) }

// request counts one answer of the order service.
func (m *Model) request(e *evidence.Event) {
	m.nRequests++
	st := int64(e.Status)
	m.statusCount[st]++
	if st >= 200 && st < 300 && e.OrderID != nil {
		m.okOrderIDs[*e.OrderID] = true
	}
	if len(m.requests) < maxRequests {
		r := Request{Kind: e.Kind, Status: st}
		if e.OrderID != nil {
			r.OrderID = evidence.Ptr(*e.OrderID)
		}
		m.requests = append(m.requests, r)
	}
}
