package model

import (
	"fmt"
	"math"
	"strconv"
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
	o := Order{ID: id, SKU: m.intern(e.SKU), Quantity: val(e.Quantity), Key: strings.Clone(e.Key), Status: int64(e.Status),
		Row: row, Lines: lines, Idem: idem, Principal: m.intern(e.Principal), AmountCents: clonePtr(e.AmountCents), src: src}
	o.LineList = m.orderLines(e, src)
	m.orderIdx[id] = int32(len(m.orders))
	m.orders = append(m.orders, o)
	m.checkAmount(&o, src)
	if stock {
		for _, l := range o.committedLines(e) {
			m.decrement(l.SKU, val(l.Stock), l.Quantity, src)
		}
	}
	if outbox {
		m.setKeyIntent(m.newIntent(e.EventID, id, src))
	}
}

// committedLines are the lines whose stock an order_committed reports:
// its lines, or, in a log that does not list them, its one SKU.
func (o *Order) committedLines(e *evidence.Event) []evidence.OrderLine {
	if o.LineList != nil {
		return o.LineList
	}
	return []evidence.OrderLine{{SKU: o.SKU, Quantity: o.Quantity, Stock: evidence.Ptr(val(e.Stock))}}
}

// decrement records one stock write of sku: the stock it left.
func (m *Model) decrement(sku string, left, quantity int64, src Source) {
	// Concurrent orders may log in another order than they committed:
	// the stock left is the lowest any of them reported.
	if cur, ok := m.stock[sku]; ok {
		m.stock[sku] = min(cur, left)
	} else {
		m.stock[sku] = left
	}
	if _, seeded := m.seedStock[sku]; seeded && len(m.decrements[sku]) < maxDecrements {
		m.decrements[sku] = append(m.decrements[sku], decrement{stock: left, quantity: quantity, src: src})
	}
}

// orderLines parses the lines of an order_committed (nil when it lists
// none); a line that does not parse, or that lacks its price and stock,
// is a lines-mismatch, and so are a sku or quantity that are not the
// first line's SKU and the lines' total.
func (m *Model) orderLines(e *evidence.Event, src Source) []evidence.OrderLine {
	if len(e.Lines) == 0 {
		return nil
	}
	out := make([]evidence.OrderLine, 0, min(len(e.Lines), maxOrderLines))
	var total int64
	for _, s := range e.Lines[:min(len(e.Lines), maxOrderLines)] {
		l, err := evidence.ParseOrderLine(s)
		if err == nil && (l.PriceCents == nil || l.Stock == nil) {
			err = fmt.Errorf("line %q has no price_cents and stock", s)
		}
		if err != nil {
			m.violate(RuleLinesMismatch, src, e.EventID, "order %d: %v", val(e.OrderID), err)
			continue
		}
		l.SKU = m.intern(l.SKU)
		total += l.Quantity
		out = append(out, l)
	}
	if len(out) > 0 && (out[0].SKU != e.SKU || total != val(e.Quantity)) {
		m.violate(RuleLinesMismatch, src, e.EventID, "order %d says sku %s quantity %d, but its lines' first SKU is %s and their total %d",
			val(e.OrderID), e.SKU, val(e.Quantity), out[0].SKU, total)
	}
	return out
}

// checkAmount (amount-mismatch): an order's amount is the sum of its
// lines' quantity times unit price, and each unit price is its SKU's
// seeded price (when the seed says it).
func (m *Model) checkAmount(o *Order, src Source) {
	if o.AmountCents == nil || o.LineList == nil {
		return
	}
	var sum int64
	overflow := false
	for _, l := range o.LineList {
		p := val(l.PriceCents)
		if seeded, ok := m.seedPrice[l.SKU]; ok && p != seeded {
			m.violate(RuleAmountMismatch, src, evidence.EventIDFor(o.ID), "order %d priced %s at %d cents, but it was seeded at %d",
				o.ID, l.SKU, p, seeded)
		}
		x, ok := mulAdd(sum, l.Quantity, p)
		overflow = overflow || !ok
		sum = x
	}
	if overflow || sum != *o.AmountCents {
		m.violate(RuleAmountMismatch, src, evidence.EventIDFor(o.ID),
			"order %d has amount %d cents, but its lines' quantity x unit price sum to %s", o.ID, *o.AmountCents, sumText(sum, overflow))
	}
}

// mulAdd returns sum + q*p, and false when it overflows int64.
func mulAdd(sum, q, p int64) (int64, bool) {
	if q < 0 || p < 0 || (p != 0 && q > math.MaxInt64/p) {
		return 0, false
	}
	if q*p > math.MaxInt64-sum {
		return 0, false
	}
	return sum + q*p, true
}

func sumText(sum int64, overflow bool) string {
	if overflow {
		return "more than an int64 holds (or a negative factor)"
	}
	return strconv.FormatInt(sum, 10)
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
	if e.OrderID != nil && len(m.rolledBackOrders) < maxRolledBackOrders {
		m.rolledBackOrders[*e.OrderID] = true
	}
	if e.EventID != "" && strings.Contains(e.Err, "1062") && len(m.rolledBackDup) < maxRolledBack {
		m.rolledBackDup = append(m.rolledBackDup, strings.Clone(e.EventID))
	}
	if e.OrderID != nil && e.EventID != "" && e.EventID != evidence.EventIDFor(*e.OrderID) {
		m.violate(RuleIntentIDMismatch, src, e.EventID, "order %d tried to write intent %q, want %q",
			*e.OrderID, e.EventID, evidence.EventIDFor(*e.OrderID))
	}
	m.request(e)
}

// stepOrderAnswered: an idempotent replay or a refused request, without
// writes. A replay answers with an order: one its principal committed
// (cross-principal-answer).
func (m *Model) stepOrderAnswered(e *evidence.Event, src Source) {
	m.request(e)
	if e.Kind == evidence.KindOrderReplayed && e.OrderID != nil && e.Principal != "" {
		if o := m.orderOf(*e.OrderID); o != nil && o.Principal != "" && o.Principal != e.Principal {
			m.violate(RuleCrossPrincipalAnswer, src, evidence.EventIDFor(o.ID),
				"the order service replayed order %d, which %s committed, to %s (key %q)", o.ID, o.Principal, e.Principal, e.Key)
		}
	}
}

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
