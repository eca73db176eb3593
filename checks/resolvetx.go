package checks

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// unlogged turns the changes of t that no logged event accounts for into
// the events their actor would have written: the order transaction
// (order_committed), a claim, a mark, an effect transaction (inbox_insert
// and effect). A change it cannot read (a column missing) is left alone:
// the replay then reports what it misses, as without the witness.
func (ix *loggedIndex) unlogged(t binlog.Transaction) []resolved {
	var out []resolved
	if r, ok := ix.unloggedOrder(t); ok {
		out = append(out, r)
	}
	var inboxAt time.Time
	for _, ch := range t.Changes {
		switch {
		case ch.Table == "outbox" && ch.Op == binlog.Update:
			out = append(out, ix.unloggedOutbox(ch)...)
		case ch.Table == "inbox" && ch.Op == binlog.Insert:
			if r, ok := ix.unloggedInbox(ch); ok {
				inboxAt = r.at
				out = append(out, r)
			}
		case ch.Table == "notification" && ch.Op == binlog.Insert:
			if r, ok := ix.unloggedEffect(ch, inboxAt); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// writeNames maps the order transaction's tables to order_committed's
// writes.
var writeNames = map[string]string{
	"stock": evidence.WriteStock, "orders": evidence.WriteOrders, "order_lines": evidence.WriteOrderLines,
	"idempotency_records": evidence.WriteIdempotency, "outbox": evidence.WriteOutbox,
}

// unloggedOrder: an order inserted in t without its order_committed,
// rebuilt from the transaction's rows: the order (principal, amount), its
// lines with their unit prices and the stock each left, the idempotency
// record (key, status) and the intent.
func (ix *loggedIndex) unloggedOrder(t binlog.Transaction) (resolved, bool) {
	var e evidence.Event
	var at time.Time
	found := false
	stockLeft := map[string]int64{}
	type line struct {
		sku        string
		qty, price int64
	}
	var lines []line
	for _, ch := range t.Changes {
		if w, ok := writeNames[ch.Table]; ok && !slices.Contains(e.Writes, w) {
			e.Writes = append(e.Writes, w)
		}
		a := ch.After
		switch {
		case ch.Table == "orders" && ch.Op == binlog.Insert:
			id, ok := binlogInt(a["id"])
			if !ok || ix.orders[id] {
				return resolved{}, false
			}
			found = true
			e.OrderID, e.EventID = evidence.Ptr(id), evidence.EventIDFor(id)
			e.SKU, _ = a["sku"].(string)
			e.Principal, _ = a["principal"].(string)
			if q, ok := binlogInt(a["quantity"]); ok {
				e.Quantity = evidence.Ptr(q)
			}
			if amt, ok := binlogInt(a["amount_cents"]); ok {
				e.AmountCents = evidence.Ptr(amt)
			}
			at, _ = a["created_at"].(time.Time)
		case ch.Table == "order_lines" && ch.Op == binlog.Insert:
			sku, _ := a["sku"].(string)
			q, _ := binlogInt(a["quantity"])
			pr, _ := binlogInt(a["price_cents"])
			lines = append(lines, line{sku, q, pr})
		case ch.Table == "stock" && ch.Op == binlog.Update:
			sku, _ := a["sku"].(string)
			if q, ok := binlogInt(a["quantity"]); ok {
				stockLeft[sku] = q
			}
		case ch.Table == "idempotency_records" && ch.Op == binlog.Insert:
			e.Key, _ = a["idem_key"].(string)
			if st, ok := binlogInt(a["status_code"]); ok {
				e.Status = int(st)
			}
		case ch.Table == "outbox" && ch.Op == binlog.Insert:
			if id, ok := a["event_id"].(string); ok && e.EventID == "" {
				e.EventID = id
			}
		}
	}
	for _, l := range lines {
		left, ok := stockLeft[l.sku]
		if !ok {
			return resolved{}, false
		}
		e.Lines = append(e.Lines, fmt.Sprintf("quantity=%d price_cents=%d stock=%d sku=%s", l.qty, l.price, left, l.sku))
	}
	if len(lines) > 0 {
		e.SKU = lines[0].sku
		e.Stock = evidence.Ptr(stockLeft[lines[0].sku])
	}
	if !found || e.Quantity == nil || e.Stock == nil || e.SKU == "" || e.Status == 0 || at.IsZero() {
		return resolved{}, false
	}
	e.Kind = evidence.KindOrderCommitted
	first, ok := ix.first[e.EventID]
	return resolved{ev: e, at: placeBefore(at, first, ok)}, true
}

// unloggedOutbox: a claim (the claim_version moved) or a mark (the row
// turned SENT) without its event.
func (ix *loggedIndex) unloggedOutbox(ch binlog.RowChange) []resolved {
	b, a := ch.Before, ch.After
	id, _ := a["event_id"].(string)
	agg, okAgg := binlogInt(a["aggregate_id"])
	vb, ok1 := binlogInt(b["claim_version"])
	va, ok2 := binlogInt(a["claim_version"])
	claimID, _ := a["claim_id"].(string)
	state, _ := a["state"].(string)
	stateBefore, _ := b["state"].(string)
	if id == "" || !okAgg || !ok1 || !ok2 {
		return nil
	}
	var out []resolved
	if va != vb && !ix.claims[id+"/"+strconv.FormatInt(va, 10)] {
		lease, _ := a["lease_until"].(time.Time)
		if !lease.IsZero() && claimID != "" {
			leaseMS := ix.leaseMS
			if leaseMS == 0 {
				leaseMS = 1000
			}
			at := lease.Add(-time.Duration(leaseMS) * time.Millisecond)
			use, ok := ix.tokenUse[settleTokenKey(id, va, claimID)]
			out = append(out, resolved{at: placeBefore(at, use, ok), ev: evidence.Event{Kind: evidence.KindClaim, EventID: id,
				OrderID: evidence.Ptr(agg), ClaimVersion: evidence.Ptr(va), ClaimID: claimID,
				LeaseUntil: evidence.Ptr(lease.UTC()), StateBefore: stateBefore}})
		}
	}
	if state == evidence.StateSent && stateBefore != evidence.StateSent && !ix.marks[id] {
		at, _ := a["sent_at"].(time.Time)
		if last, ok := ix.lastPub[settleTokenKey(id, va, claimID)]; ok && !at.After(last) {
			at = last.Add(time.Microsecond)
		}
		if !at.IsZero() && claimID != "" {
			out = append(out, resolved{at: at, ev: evidence.Event{Kind: evidence.KindMark, EventID: id, OrderID: evidence.Ptr(agg),
				ClaimVersion: evidence.Ptr(va), ClaimID: claimID, Rows: evidence.Ptr(int64(1))}})
		}
	}
	return out
}

// unloggedInbox: an inbox row without its inbox_insert; it comes after
// the first receive of its record.
func (ix *loggedIndex) unloggedInbox(ch binlog.RowChange) (resolved, bool) {
	a := ch.After
	consumer, _ := a["consumer"].(string)
	id, _ := a["event_id"].(string)
	topic, _ := a["topic"].(string)
	part, ok1 := binlogInt(a["part"])
	off, ok2 := binlogInt(a["msg_offset"])
	at, _ := a["received_at"].(time.Time)
	if consumer == "" || id == "" || topic == "" || !ok1 || !ok2 || at.IsZero() || ix.inbox[consumer+"/"+id] {
		return resolved{}, false
	}
	if r, ok := ix.recv[settleRecordID(topic, int32(part), off)]; ok && !at.After(r) {
		at = r.Add(time.Microsecond)
	}
	return resolved{at: at, ev: evidence.Event{Kind: evidence.KindInboxInsert, EventID: id, Consumer: consumer, Topic: topic,
		Partition: evidence.Ptr(int32(part)), Offset: evidence.Ptr(off)}}, true
}

// unloggedEffect: a notification without its effect event; it comes after
// the inbox row of its transaction.
func (ix *loggedIndex) unloggedEffect(ch binlog.RowChange, inboxAt time.Time) (resolved, bool) {
	a := ch.After
	nid, ok1 := binlogInt(a["id"])
	order, ok2 := binlogInt(a["order_id"])
	consumer, _ := a["consumer"].(string)
	id, _ := a["event_id"].(string)
	at, _ := a["created_at"].(time.Time)
	if !ok1 || !ok2 || consumer == "" || id == "" || at.IsZero() || ix.effects[nid] {
		return resolved{}, false
	}
	if !inboxAt.IsZero() && !at.After(inboxAt) {
		at = inboxAt.Add(time.Microsecond)
	}
	return resolved{at: at, ev: evidence.Event{Kind: evidence.KindEffect, EventID: id, OrderID: evidence.Ptr(order),
		NotificationID: evidence.Ptr(nid), Consumer: consumer}}, true
}

// intOf reads an integer column.
func binlogInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), true
	}
	return 0, false
}
