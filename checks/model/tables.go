package model

import (
	"slices"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Table yields the rows of one replayed table without building them all
// at once.
type Table struct {
	Spec evidence.DigestSpec
	N    int                          // how many rows
	Row  func(i int, dst []any) []any // appends row i's values (int64, string or nil) to dst
}

// Tables returns the replayed end state, one Table per
// evidence.DigestSpecs entry, rows in creation order. It reads only what
// Release keeps.
func (m *Model) Tables() []Table {
	var stockSKUs []string
	stockSKUs = append(stockSKUs, m.skus...)
	extra := []string{}
	for sku := range m.stock { // stock written by an order for an unseeded SKU
		if _, seeded := m.seedStock[sku]; !seeded {
			extra = append(extra, sku)
		}
	}
	slices.Sort(extra)
	stockSKUs = append(stockSKUs, extra...)
	var rowsOf, idemOf []*Order
	type lineRow struct {
		order int64
		line  evidence.OrderLine
	}
	var linesOf []lineRow
	for i := range m.orders {
		o := &m.orders[i]
		if o.Row {
			rowsOf = append(rowsOf, o)
		}
		if o.Lines {
			for _, l := range o.OrderLines() {
				linesOf = append(linesOf, lineRow{o.ID, l})
			}
		}
		if o.Idem {
			idemOf = append(idemOf, o)
		}
	}
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	ptrOrNull := func(p *int64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	src := map[string]Table{
		"stock": {N: len(stockSKUs), Row: func(i int, d []any) []any { return append(d, stockSKUs[i], m.stock[stockSKUs[i]]) }},
		"orders": {N: len(rowsOf), Row: func(i int, d []any) []any {
			o := rowsOf[i]
			return append(d, o.ID, o.SKU, o.Quantity, orNull(o.Principal), ptrOrNull(o.AmountCents))
		}},
		"order_lines": {N: len(linesOf), Row: func(i int, d []any) []any {
			l := linesOf[i]
			return append(d, l.order, l.line.SKU, l.line.Quantity, ptrOrNull(l.line.PriceCents))
		}},
		"idempotency_records": {N: len(idemOf), Row: func(i int, d []any) []any {
			return append(d, idemOf[i].Key, idemOf[i].ID, idemOf[i].Status, orNull(idemOf[i].Principal))
		}},
		"outbox": {N: len(m.rows), Row: func(i int, d []any) []any {
			in := m.rows[i]
			var claimID any
			if in.claimID != "" {
				claimID = in.claimID
			}
			return append(d, in.id, in.aggregateID, in.state, in.claimVersion, claimID)
		}},
		"inbox": {N: len(m.inboxOrder), Row: func(i int, d []any) []any {
			return append(d, m.inboxOrder[i].consumer, m.inboxOrder[i].eventID)
		}},
		"notification": {N: len(m.notifs), Row: func(i int, d []any) []any {
			n := &m.notifs[i]
			return append(d, n.id, n.consumer, n.eventID, n.orderID)
		}},
	}
	out := make([]Table, len(evidence.DigestSpecs))
	for i, s := range evidence.DigestSpecs {
		t := src[s.Table]
		t.Spec = s
		out[i] = t
	}
	return out
}
