package orders

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// placeTx is one order transaction: its five writes, one step each, and
// what it wrote so far, so that a failure rolls back and records exactly
// that. A step returns done with the request's outcome when the request
// ends there.
type placeTx struct {
	s                  *Service
	tx                 *sql.Tx
	principal, key, fp string
	req                PlaceRequest
	lines              []placedLine // in request order
	writes             []string
	orderID            *int64
	eventID            string
	amount             int64
	body               []byte // the 201 answer, also stored for replays
}

// placedLine is one line of the order with its unit price and the stock
// its decrement left.
type placedLine struct {
	Line
	price, left int64
}

// place runs the order transaction.
func (s *Service) place(ctx context.Context, principal, key, fp string, req PlaceRequest) outcome {
	tx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return rejected(http.StatusInternalServerError, key, "internal error", "begin order transaction: "+err.Error())
	}
	p := &placeTx{s: s, tx: tx, principal: principal, key: key, fp: fp, req: req}
	for _, l := range req.OrderLines() {
		p.lines = append(p.lines, placedLine{Line: l})
	}
	for _, step := range []func(context.Context) (outcome, bool){
		p.decrementStock, p.insertOrder, p.insertLines, p.insertIdempotency,
	} {
		if o, done := step(ctx); done {
			return o
		}
	}
	first := p.lines[0]
	payload, err := json.Marshal(OutboxPayload{OrderID: *p.orderID, SKU: first.SKU, Quantity: p.quantity(), AmountCents: p.amount,
		Lines: p.several()})
	if err != nil {
		return p.internal("encode outbox payload", err)
	}
	if s.cfg.Plant == plant.OutboxOutsideTx {
		return s.placeOutboxOutsideTx(ctx, p, payload)
	}
	// The chaos nemesis may stop the service here (spec.IntentInsert).
	if err := s.cfg.Faults.Hit(spec.IntentInsert); err != nil {
		return p.internal("before the outbox intent", err)
	}
	// 5. The outbox intent, in the same transaction.
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state) VALUES (?, ?, 1, ?, ?)`,
		p.eventID, *p.orderID, string(payload), evidence.StatePending); err != nil {
		o := p.fail(http.StatusInternalServerError, "order could not be placed: outbox intent conflict",
			fmt.Errorf("insert outbox intent: %w", err))
		if s.cfg.Plant == plant.CreatedOnRollback {
			// The planted bug: the answer prepared for the client goes
			// out although the transaction was rolled back.
			o.status, o.body = http.StatusCreated, p.body
		}
		return o
	}
	p.writes = append(p.writes, evidence.WriteOutbox)
	if err := tx.Commit(); err != nil {
		// The outcome of a failed COMMIT is unknown to us; say so.
		return p.fail(http.StatusInternalServerError, "internal error", fmt.Errorf("commit (outcome unknown): %w", err))
	}
	return outcome{status: http.StatusCreated, body: p.body, events: []evidence.Event{p.committed()}}
}

// quantity is the order's total quantity.
func (p *placeTx) quantity() int {
	n := 0
	for _, l := range p.lines {
		n += l.Quantity
	}
	return n
}

// several returns the lines of an order of more than one line (nil for
// one line, whose answer and payload keep their one-line form).
func (p *placeTx) several() []Line {
	if len(p.lines) < 2 {
		return nil
	}
	out := make([]Line, len(p.lines))
	for i, l := range p.lines {
		out[i] = l.Line
	}
	return out
}

// fail rolls back explicitly (MariaDB keeps the earlier writes of a
// transaction after a failed statement) and records what happened: a
// refusal when nothing was written, a rollback otherwise.
func (p *placeTx) fail(status int, msg string, cause error) outcome {
	if rbErr := p.tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
		cause = fmt.Errorf("%w (rollback: %v)", cause, rbErr)
	}
	if len(p.writes) == 0 {
		return rejected(status, p.key, msg, cause.Error())
	}
	return outcome{
		status: status,
		body:   errorBody(msg),
		events: []evidence.Event{{
			Kind:    evidence.KindOrderRolledBack,
			OrderID: p.orderID,
			EventID: p.eventID,
			Key:     p.key,
			Status:  status,
			Err:     clip(cause.Error(), 4096),
		}},
	}
}

func (p *placeTx) internal(op string, err error) outcome {
	return p.fail(http.StatusInternalServerError, "internal error", fmt.Errorf("%s: %w", op, err))
}

// decrementStock is write 1: the conditional stock decrement of every
// line, in SKU order (so that two orders of the same SKUs lock their rows
// in one order and cannot deadlock), and the prices and amount they imply.
func (p *placeTx) decrementStock(ctx context.Context) (outcome, bool) {
	idx := make([]int, len(p.lines))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(p.lines[a].SKU, p.lines[b].SKU) })
	for _, i := range idx {
		l := &p.lines[i]
		q := int64(l.Quantity)
		res, err := p.tx.ExecContext(ctx,
			`UPDATE stock SET quantity = quantity - ? WHERE sku = ? AND quantity >= ?`, q, l.SKU, q)
		if err != nil {
			return p.internal("decrement stock", err), true
		}
		n, err := res.RowsAffected()
		if err != nil {
			return p.internal("decrement stock", err), true
		}
		if n == 0 {
			return p.noStock(ctx, l.SKU), true
		}
		if len(p.writes) == 0 {
			p.writes = append(p.writes, evidence.WriteStock)
		}
		if err := p.tx.QueryRowContext(ctx, `SELECT quantity, price_cents FROM stock WHERE sku = ?`, l.SKU).Scan(&l.left, &l.price); err != nil {
			return p.internal("read stock", err), true
		}
		amount := l.price * q
		if p.s.cfg.Plant == plant.AmountIgnoresQuantity {
			amount = l.price // the planted bug: one unit's price per line
		}
		if l.price < 0 || l.price > math.MaxInt64/q || amount > math.MaxInt64-p.amount {
			return p.internal("price", fmt.Errorf("amount of %d x %d cents out of range", q, l.price)), true
		}
		p.amount += amount
	}
	return outcome{}, false
}

// noStock answers a decrement of sku that changed no row: unknown SKU,
// too little stock, or the stored answer of this very request placed by
// another process while this one waited on the row lock.
func (p *placeTx) noStock(ctx context.Context, sku string) outcome {
	var known int
	if err := p.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM stock WHERE sku = ?`, sku).Scan(&known); err != nil {
		return p.internal("look up sku", err)
	}
	_ = p.tx.Rollback() // nothing was written, or only decrements now undone
	if o, found, err := p.s.fromRecord(ctx, p.principal, p.key, p.fp); err == nil && found {
		return o
	}
	if known == 0 {
		return rejected(http.StatusNotFound, p.key, "unknown sku", "unknown sku "+sku)
	}
	return rejected(http.StatusConflict, p.key, "insufficient stock", "insufficient stock of "+sku)
}

// insertOrder is write 2: the order, whose id names the intent. Its sku
// is the first line's, its quantity the order's total.
func (p *placeTx) insertOrder(ctx context.Context) (outcome, bool) {
	res, err := p.tx.ExecContext(ctx,
		`INSERT INTO orders (principal, sku, quantity, amount_cents) VALUES (?, ?, ?, ?)`,
		p.principal, p.lines[0].SKU, int64(p.quantity()), p.amount)
	if err != nil {
		return p.internal("insert order", err), true
	}
	id, err := res.LastInsertId()
	if err != nil {
		return p.internal("insert order", err), true
	}
	p.writes = append(p.writes, evidence.WriteOrders)
	p.orderID = evidence.Ptr(id)
	p.eventID = evidence.EventIDFor(id)
	return outcome{}, false
}

// insertLines is write 3: the order's lines, in request order.
func (p *placeTx) insertLines(ctx context.Context) (outcome, bool) {
	for _, l := range p.lines {
		if _, err := p.tx.ExecContext(ctx,
			`INSERT INTO order_lines (order_id, sku, quantity, price_cents) VALUES (?, ?, ?, ?)`,
			*p.orderID, l.SKU, int64(l.Quantity), l.price); err != nil {
			return p.internal("insert order line", err), true
		}
	}
	p.writes = append(p.writes, evidence.WriteOrderLines)
	return outcome{}, false
}

// insertIdempotency is write 4: the idempotency record with the answer a
// replay gets. Losing the unique key to another process that committed the
// same (principal, key) meanwhile rolls back and answers from its record.
func (p *placeTx) insertIdempotency(ctx context.Context) (outcome, bool) {
	id := *p.orderID
	first := p.lines[0]
	body, err := json.Marshal(PlaceResponse{
		OrderID: id, EventID: p.eventID, SKU: first.SKU, Quantity: p.quantity(),
		AmountCents: p.amount, StockLeft: first.left, Lines: p.several(),
	})
	if err != nil {
		return p.internal("encode response", err), true
	}
	p.body = body
	if _, err := p.tx.ExecContext(ctx,
		`INSERT INTO idempotency_records (principal, idem_key, request_hash, status_code, response_body, order_id) VALUES (?, ?, ?, ?, ?, ?)`,
		p.principal, p.key, p.fp, http.StatusCreated, string(body), id); err != nil {
		if !isDuplicate(err) {
			return p.internal("insert idempotency record", err), true
		}
		dup := p.fail(http.StatusConflict, "a request with this Idempotency-Key is in flight",
			fmt.Errorf("insert idempotency record: %w", err))
		if o, found, ferr := p.s.fromRecord(ctx, p.principal, p.key, p.fp); ferr == nil && found {
			// The client gets the stored answer, but this request's own
			// writes were rolled back: both are recorded.
			o.events = append(dup.events, o.events...)
			return o, true
		}
		return dup, true
	}
	p.writes = append(p.writes, evidence.WriteIdempotency)
	return outcome{}, false
}

// committed is the order_committed event of the transaction's writes.
func (p *placeTx) committed() evidence.Event {
	lines := make([]string, len(p.lines))
	for i, l := range p.lines {
		lines[i] = evidence.OrderLine{SKU: l.SKU, Quantity: int64(l.Quantity), PriceCents: evidence.Ptr(l.price),
			Stock: evidence.Ptr(l.left)}.String()
	}
	return evidence.Event{
		Kind:        evidence.KindOrderCommitted,
		OrderID:     evidence.Ptr(*p.orderID),
		EventID:     p.eventID,
		Key:         p.key,
		SKU:         p.lines[0].SKU,
		Quantity:    evidence.Ptr(int64(p.quantity())),
		Stock:       evidence.Ptr(p.lines[0].left),
		Status:      http.StatusCreated,
		Writes:      append([]string(nil), p.writes...),
		Lines:       lines,
		AmountCents: evidence.Ptr(p.amount),
	}
}

// placeOutboxOutsideTx is the planted bug: the order commits with four
// writes, and the intent follows in a transaction of its own, with a crash
// window in between.
func (s *Service) placeOutboxOutsideTx(ctx context.Context, p *placeTx, payload []byte) outcome {
	if err := p.tx.Commit(); err != nil {
		return p.fail(http.StatusInternalServerError, "internal error", fmt.Errorf("commit (outcome unknown): %w", err))
	}
	id, eventID := *p.orderID, p.eventID
	events := []evidence.Event{p.committed()}
	if err := s.cfg.Faults.Hit(spec.AfterOrderCommitBeforeOutbox); err != nil {
		return outcome{status: http.StatusInternalServerError, body: errorBody("internal error"), events: events}
	}
	intentFailed := func(err error) outcome {
		events = append(events, evidence.Event{
			Kind:    evidence.KindOrderRolledBack,
			OrderID: evidence.Ptr(id),
			EventID: eventID,
			Key:     p.key,
			Status:  http.StatusInternalServerError,
			Err:     clip(err.Error(), 4096),
		})
		return outcome{status: http.StatusInternalServerError, body: errorBody("internal error"), events: events}
	}
	otx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return intentFailed(fmt.Errorf("begin outbox transaction: %w", err))
	}
	if _, err := otx.ExecContext(ctx,
		`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state) VALUES (?, ?, 1, ?, ?)`,
		eventID, id, string(payload), evidence.StatePending); err != nil {
		_ = otx.Rollback()
		return intentFailed(fmt.Errorf("insert outbox intent: %w", err))
	}
	if err := otx.Commit(); err != nil {
		return intentFailed(fmt.Errorf("commit outbox intent (outcome unknown): %w", err))
	}
	events = append(events, evidence.Event{Kind: evidence.KindOutboxWritten, OrderID: evidence.Ptr(id), EventID: eventID})
	return outcome{status: http.StatusCreated, body: p.body, events: events}
}
