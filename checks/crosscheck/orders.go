package crosscheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// The commit boundary as the binlog shows it: seeds, orders, rolled-back
// requests.

// intentPayloads maps each outbox intent's event id to its payload as
// inserted.
func intentPayloads(d *scenarioDB) map[string]string {
	out := map[string]string{}
	for _, ch := range d.changes {
		if is(ch.c, "outbox", binlog.Insert) {
			id, _ := vStr(ch.c.After["event_id"])
			out[id], _ = vStr(ch.c.After["payload"])
		}
	}
	return out
}

// seeds: every seed_stock, seed_outbox and outbox_written is a transaction
// of that one row.
func (s *scenarioCheck) seeds() {
	for _, w := range s.kinds(evidence.KindSeedStock, evidence.KindSeedOutbox, evidence.KindOutboxWritten) {
		e := w.e
		var match func(*binlog.RowChange) bool
		var what string
		switch e.Kind {
		case evidence.KindSeedStock:
			what = fmt.Sprintf("stock row %s = %d", e.SKU, i64(e.Stock))
			if e.PriceCents != nil {
				what += fmt.Sprintf(" at %d cents", *e.PriceCents)
			}
			match = func(c *binlog.RowChange) bool {
				return c.Table == "stock" && c.Op != binlog.Delete && eqStr(c.After["sku"], e.SKU) && eqInt(c.After["quantity"], i64(e.Stock)) &&
					(e.PriceCents == nil || eqInt(c.After["price_cents"], *e.PriceCents))
			}
		case evidence.KindSeedOutbox:
			what = fmt.Sprintf("outbox row %s (aggregate %d, %s, claim_version %d, payload sha256 %.12s)", e.EventID, i64(e.OrderID),
				e.State, i64(e.ClaimVersion), e.PayloadSHA256)
			match = func(c *binlog.RowChange) bool {
				a := c.After
				return is(c, "outbox", binlog.Insert) && eqStr(a["event_id"], e.EventID) && eqInt(a["aggregate_id"], i64(e.OrderID)) &&
					eqStr(a["state"], e.State) && eqInt(a["claim_version"], i64(e.ClaimVersion)) && payloadSHA256(a["payload"]) == e.PayloadSHA256
			}
		default:
			what = fmt.Sprintf("outbox intent %s of order %d, in a transaction of its own", e.EventID, i64(e.OrderID))
			match = func(c *binlog.RowChange) bool {
				return is(c, "outbox", binlog.Insert) && eqStr(c.After["event_id"], e.EventID) && eqInt(c.After["aggregate_id"], i64(e.OrderID))
			}
		}
		s.single(w, what, match)
	}
}

// single matches a logged write to a transaction holding that one row.
func (s *scenarioCheck) single(w Event, what string, match func(*binlog.RowChange) bool) {
	found := s.db.find(match)
	if len(found) == 0 {
		s.add(w.reason("witness-write", "", "the log says %s was written, but no transaction of the binlog wrote it", what))
		return
	}
	ch := found[0]
	s.db.use(ch)
	if all := s.db.byTx[ch.tx]; len(all) != 1 {
		s.db.use(all...)
		s.add(w.reason("witness-write", txWhere(*ch.tx), "%s was written in a transaction that also wrote other rows (%s)", what, txDescribe(all)))
	}
}

// orders: every committed order is exactly one transaction holding its
// writes (stock, order, line(s), idempotency record, outbox intent) with
// the logged values, and nothing else.
func (s *scenarioCheck) orders() {
	for _, w := range s.kinds(evidence.KindOrderCommitted) {
		id := i64(w.e.OrderID)
		found := s.db.find(func(c *binlog.RowChange) bool { return is(c, "orders", binlog.Insert) && eqInt(c.After["id"], id) })
		if len(found) != 1 {
			s.add(w.reason("witness-order-tx", "", "the log says order %d committed, but %d transactions of the binlog insert it",
				id, len(found)))
			continue
		}
		tx := found[0].tx
		chs := s.db.byTx[tx]
		s.db.use(chs...)
		if problems := orderProblems(w.e, chs); len(problems) > 0 {
			s.add(w.reason("witness-order-tx", txWhere(*tx), "order %d's transaction is not what the log says: %s",
				id, strings.Join(problems, "; ")))
			continue
		}
		s.sum.orderTx(tx, len(chs))
	}
}

// orderProblems compares an order's transaction with its order_committed:
// one stock decrement and one order line per line the log lists (the
// order's own sku, quantity and stock when it lists none), the order row,
// the idempotency record and the intent, nothing else.
func orderProblems(e evidence.Event, chs []*change) []string {
	var problems []string
	if got := tablesInOrder(chs); !slices.Equal(got, e.Writes) {
		problems = append(problems, fmt.Sprintf("it writes %s, the log lists %s", strings.Join(got, ", "), strings.Join(e.Writes, ", ")))
	}
	id := i64(e.OrderID)
	lines, exact := committedLines(e)
	want := map[string]int{"stock": len(lines), "orders": 1, "order_lines": len(lines), "idempotency_records": 1}
	if slices.Contains(e.Writes, evidence.WriteOutbox) {
		want["outbox"] = 1
	}
	got := map[string]int{}
	stockSeen, lineSeen := map[string]int{}, map[string]int{}
	for _, ch := range chs {
		c := ch.c
		p, known := orderRow(e, id, lines, stockSeen, lineSeen, c)
		if !known {
			problems = append(problems, "it also "+describe(c)+"s a row")
			continue
		}
		got[c.Table]++
		if p != "" {
			problems = append(problems, p)
		}
	}
	for _, t := range orderedKeys(want) {
		switch n := got[t]; {
		case t == "order_lines" && !exact && n >= 1:
			// A log without lines does not say how many the order had.
		case n != want[t]:
			problems = append(problems, fmt.Sprintf("%d %s row(s) where the order writes %d", n, t, want[t]))
		}
	}
	return problems
}

// committedLines are the lines an order_committed says its transaction
// wrote; exact is false for a log without them (older versions), where
// the order's own sku, quantity and stock stand for its one stock row.
func committedLines(e evidence.Event) (lines []evidence.OrderLine, exact bool) {
	for _, s := range e.Lines {
		l, err := evidence.ParseOrderLine(s)
		if err != nil || l.Stock == nil {
			lines = nil
			break
		}
		lines = append(lines, l)
	}
	if len(lines) > 0 {
		return lines, true
	}
	return []evidence.OrderLine{{SKU: e.SKU, Quantity: i64(e.Quantity), Stock: e.Stock}}, false
}

// lineFor returns the next line of sku not yet matched in seen.
func lineFor(lines []evidence.OrderLine, sku any, seen map[string]int) (evidence.OrderLine, bool) {
	k := show(sku)
	n := 0
	for _, l := range lines {
		if eqStr(sku, l.SKU) {
			if n == seen[k] {
				seen[k]++
				return l, true
			}
			n++
		}
	}
	return evidence.OrderLine{}, false
}

// orderRow checks one row of an order's transaction; known is false for
// a row an order transaction does not write.
func orderRow(e evidence.Event, id int64, lines []evidence.OrderLine, stockSeen, lineSeen map[string]int,
	c *binlog.RowChange) (problem string, known bool) {
	a, b := c.After, c.Before
	mismatch := func(what string, got, want any) string {
		return fmt.Sprintf("%s is %s, the log says %s", what, show(got), show(want))
	}
	switch {
	case is(c, "stock", binlog.Update):
		l, ok := lineFor(lines, a["sku"], stockSeen)
		before, _ := vInt(b["quantity"])
		after, _ := vInt(a["quantity"])
		switch {
		case !ok:
			return fmt.Sprintf("the stock row of %s is decremented, the log lists no (further) line of it", show(a["sku"])), true
		case after != i64(l.Stock):
			return fmt.Sprintf("the stock left of %s is %d, the log says %d", l.SKU, after, i64(l.Stock)), true
		case before-after != l.Quantity:
			return fmt.Sprintf("the stock decrement of %s is %d, the log says %d", l.SKU, before-after, l.Quantity), true
		}
	case is(c, "orders", binlog.Insert):
		switch {
		case !eqStr(a["sku"], e.SKU) || !eqInt(a["quantity"], i64(e.Quantity)):
			return fmt.Sprintf("the order row is %s × %s, the log says %s × %d", show(a["sku"]), show(a["quantity"]), e.SKU, i64(e.Quantity)), true
		case e.Principal != "" && a["principal"] != nil && !eqStr(a["principal"], e.Principal):
			return mismatch("the order's principal", a["principal"], e.Principal), true
		}
	case is(c, "order_lines", binlog.Insert):
		if !eqInt(a["order_id"], id) {
			return mismatch("an order line's order_id", a["order_id"], id), true
		}
		if len(e.Lines) == 0 {
			return "", true
		}
		l, ok := lineFor(lines, a["sku"], lineSeen)
		switch {
		case !ok:
			return fmt.Sprintf("an order line of %s is written, the log lists no (further) line of it", show(a["sku"])), true
		case !eqInt(a["quantity"], l.Quantity):
			return fmt.Sprintf("the order line of %s has quantity %s, the log says %d", l.SKU, show(a["quantity"]), l.Quantity), true
		case l.PriceCents != nil && a["price_cents"] != nil && !eqInt(a["price_cents"], *l.PriceCents):
			return fmt.Sprintf("the order line of %s has price_cents %s, the log says %d", l.SKU, show(a["price_cents"]), *l.PriceCents), true
		}
	case is(c, "idempotency_records", binlog.Insert):
		switch {
		case !eqStr(a["idem_key"], e.Key):
			return mismatch("the idempotency key", a["idem_key"], e.Key), true
		case e.Principal != "" && a["principal"] != nil && !eqStr(a["principal"], e.Principal):
			return mismatch("the idempotency record's principal", a["principal"], e.Principal), true
		case !eqInt(a["order_id"], id) || !eqInt(a["status_code"], int64(e.Status)):
			return fmt.Sprintf("the idempotency record answers order %s with %s, the log says order %d with %d",
				show(a["order_id"]), show(a["status_code"]), id, e.Status), true
		}
	case is(c, "outbox", binlog.Insert):
		if !eqStr(a["event_id"], e.EventID) || !eqInt(a["aggregate_id"], id) || !eqStr(a["state"], evidence.StatePending) ||
			!eqInt(a["claim_version"], 0) || !eqInt(a["aggregate_version"], 1) {
			return fmt.Sprintf("the outbox intent is %s of aggregate %s version %s (%s, claim_version %s), the log says %s of order %d "+
				"version 1 (PENDING, 0)", show(a["event_id"]), show(a["aggregate_id"]), show(a["aggregate_version"]), show(a["state"]),
				show(a["claim_version"]), e.EventID, id), true
		}
	default:
		return "", false
	}
	return "", true
}

// advances: every order_advanced is one transaction of the order row's
// status change and the intent of that version, and nothing else.
func (s *scenarioCheck) advances() {
	for _, w := range s.kinds(evidence.KindOrderAdvanced) {
		e := w.e
		found := s.db.find(func(c *binlog.RowChange) bool {
			return is(c, "outbox", binlog.Insert) && eqStr(c.After["event_id"], e.EventID)
		})
		if len(found) != 1 {
			s.add(w.reason("witness-order-tx", "", "the log says order %d advanced to %s with intent %s, but %d transactions of the "+
				"binlog insert that intent", i64(e.OrderID), e.OrderStatus, e.EventID, len(found)))
			continue
		}
		tx := found[0].tx
		chs := s.db.byTx[tx]
		s.db.use(chs...)
		if problems := advanceProblems(e, chs); len(problems) > 0 {
			s.add(w.reason("witness-order-tx", txWhere(*tx), "order %d's advance to %s is not what the log says: %s",
				i64(e.OrderID), e.OrderStatus, strings.Join(problems, "; ")))
			continue
		}
		s.sum.orderTx(tx, len(chs))
	}
}

// advanceProblems compares an advance's transaction with its event.
func advanceProblems(e evidence.Event, chs []*change) []string {
	var problems []string
	if got := tablesInOrder(chs); !slices.Equal(got, e.Writes) {
		problems = append(problems, fmt.Sprintf("it writes %s, the log lists %s", strings.Join(got, ", "), strings.Join(e.Writes, ", ")))
	}
	id := i64(e.OrderID)
	orders, intents := 0, 0
	for _, ch := range chs {
		c, a := ch.c, ch.c.After
		switch {
		case is(c, "orders", binlog.Update) && eqInt(c.Before["id"], id):
			orders++
			if !eqStr(a["status"], e.OrderStatus) {
				problems = append(problems, fmt.Sprintf("the order's status became %s, the log says %s", show(a["status"]), e.OrderStatus))
			}
		case is(c, "outbox", binlog.Insert):
			intents++
			if !eqInt(a["aggregate_id"], id) || !eqInt(a["aggregate_version"], i64(e.AggregateVersion)) ||
				!eqStr(a["state"], evidence.StatePending) || !eqInt(a["claim_version"], 0) {
				problems = append(problems, fmt.Sprintf("the intent is of aggregate %s version %s (%s, claim_version %s), the log says "+
					"order %d version %d (PENDING, 0)", show(a["aggregate_id"]), show(a["aggregate_version"]), show(a["state"]),
					show(a["claim_version"]), id, i64(e.AggregateVersion)))
			}
		default:
			problems = append(problems, "it also "+describe(c)+"s a row")
		}
	}
	if orders != 1 || intents != 1 {
		problems = append(problems, fmt.Sprintf("%d order update(s) and %d intent(s) where an advance writes one of each", orders, intents))
	}
	return problems
}

// answers: every 2xx answer the client recorded (order_request) names an
// order the binlog has under the client's key (and principal), and its
// body is the answer the database stored for that key, byte for byte.
// The rows are not consumed: the order's own event explains them.
func (s *scenarioCheck) answers() {
	for _, w := range s.kinds(evidence.KindOrderRequest) {
		e := w.e
		if e.Status < 200 || e.Status > 299 || e.OrderID == nil {
			continue
		}
		if e.HasRawRequest() && e.Key == "" {
			// A generated request: the key is the one the contract
			// reads from the headers sent (the reference model's).
			e.Key, _ = model.ContractKey(e.KeyHeaders)
		}
		var rec *binlog.RowChange
		for _, ch := range s.db.changes {
			if is(ch.c, "idempotency_records", binlog.Insert) && eqStr(ch.c.After["idem_key"], e.Key) &&
				(e.Principal == "" || ch.c.After["principal"] == nil || eqStr(ch.c.After["principal"], e.Principal)) {
				rec = ch.c
			}
		}
		switch {
		case rec == nil:
			s.add(w.reason("witness-answer", "", "the client got %d naming order %d for key %q, but the binlog has no idempotency "+
				"record of that key", e.Status, *e.OrderID, e.Key))
		case !eqInt(rec.After["order_id"], *e.OrderID):
			s.add(w.reason("witness-answer", "", "the client got order %d for key %q, but the binlog records order %s under that key",
				*e.OrderID, e.Key, show(rec.After["order_id"])))
		case e.PayloadSHA256 != "" && rec.After["response_body"] != nil && payloadSHA256(rec.After["response_body"]) != e.PayloadSHA256:
			s.add(w.reason("witness-answer", "", "the body the client got for key %q (sha256 %.12s) is not the answer the database "+
				"stored for it (sha256 %.12s)", e.Key, e.PayloadSHA256, payloadSHA256(rec.After["response_body"])))
		default:
			s.sum.answers++
		}
	}
}

// rollbacks: a request the log calls rolled back has no transaction: no
// committed row of its order.
func (s *scenarioCheck) rollbacks() {
	for _, w := range s.kinds(evidence.KindOrderRolledBack) {
		if w.e.OrderID == nil || *w.e.OrderID <= 0 {
			s.sum.rolledBack++
			continue
		}
		id := *w.e.OrderID
		found := s.db.find(func(c *binlog.RowChange) bool {
			return (is(c, "orders", binlog.Insert) && eqInt(c.After["id"], id)) ||
				(c.Table == "order_lines" && eqInt(c.After["order_id"], id)) ||
				(c.Table == "idempotency_records" && eqInt(c.After["order_id"], id) && eqStr(c.After["idem_key"], w.e.Key))
		})
		if len(found) == 0 {
			s.sum.rolledBack++
			continue
		}
		chs := s.db.byTx[found[0].tx]
		s.db.use(chs...)
		s.add(w.reason("witness-rollback-wrote", txWhere(*found[0].tx),
			"the log says order %d was rolled back, but the binlog has it committed (%s)", id, txDescribe(chs)))
	}
}

// unloggedWrites: every row change left is one no event explains, and so
// is a statement that is not DDL.
func (s *scenarioCheck) unloggedWrites() {
	seen := map[*binlog.Transaction]bool{}
	for _, ch := range s.db.changes {
		if ch.used || seen[ch.tx] {
			continue
		}
		seen[ch.tx] = true
		var left []*change
		for _, x := range s.db.byTx[ch.tx] {
			if !x.used {
				left = append(left, x)
			}
		}
		s.unexplained(finding.Reason{Rule: "witness-unlogged-write", Status: finding.Fail, Witness: txWhere(*ch.tx),
			Message: fmt.Sprintf("the database committed %s, which no event of the scenario's logs explains: an actor wrote "+
				"without saying so", txDescribe(left))})
	}
	for _, t := range s.db.notDDL {
		s.unexplained(finding.Reason{Rule: "witness-unlogged-write", Status: finding.Fail, Witness: txWhere(*t),
			Message: fmt.Sprintf("the database logged the statement %q, which no event of the scenario's logs explains", clip(t.Statements[0].SQL, 80))})
	}
}
