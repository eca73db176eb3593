package runner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
)

// businessRuns are the scenarios this file runs, by id (runs). Orders of
// several users and several lines (spec/placement.go): an idempotency key
// belongs to its user, and an order's amount is what its lines cost.
var businessRuns = map[string]runFunc{
	"twoUsersOneKey": twoUsersOneKey,
	"orderAmounts":   orderAmounts,
}

// otherUser is the second principal of twoUsersOneKey.
const otherUser = "bob"

// twoUsersOneKey runs the scenario twoUsersOneKey of spec/placement.go,
// which says what it does and what its metrics mean.
func twoUsersOneKey(ctx context.Context, e *Env) error {
	cl, err := e.setupOrders(ctx, 10)
	if err != nil {
		return err
	}
	const key = "shared-key"
	users := []string{principal, otherUser, principal, otherUser}
	answers := make([]orders.Result, len(users))
	for i, u := range users {
		if answers[i], err = e.post(ctx, cl, e.userToken(u), key, orders.PlaceRequest{SKU: defaultSKU, Quantity: 1}); err != nil {
			return err
		}
	}
	ids := map[int64]bool{}
	first := map[string]int64{} // user -> the order of its first 201
	var own, cross int64
	for i, res := range answers {
		if res.Status != http.StatusCreated || res.Order == nil {
			continue
		}
		id, u := res.Order.OrderID, users[i]
		ids[id] = true
		by, err := e.orderPrincipal(ctx, id)
		if err != nil {
			return err
		}
		if by != "" && by != u {
			cross++
		}
		if f, seen := first[u]; !seen {
			first[u] = id
		} else if f == id && by == u {
			own++
		}
	}
	n, err := e.Count(ctx, "orders", "")
	if err != nil {
		return err
	}
	e.Result.Metric("orders", n)
	e.Result.Metric("distinctOrderIds", len(ids))
	e.Result.Metric("ownReplays", own)
	e.Result.Metric("crossAnswers", cross)
	return nil
}

// orderPrincipal is the user an order row belongs to ("" when there is
// no such row).
func (e *Env) orderPrincipal(ctx context.Context, id int64) (string, error) {
	var p string
	err := e.DB.QueryRowContext(ctx, `SELECT principal FROM orders WHERE id = ?`, id).Scan(&p)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read order %d: %w", id, err)
	}
	return p, nil
}

// The SKUs of orderAmounts with their unit prices in cents, and its
// orders.
var (
	amountPrices = []struct {
		sku   string
		price int64
	}{{"SKU-A", 1250}, {"SKU-B", 399}, {"SKU-C", 7000}}
	amountOrders = [][]orders.Line{
		{{SKU: "SKU-A", Quantity: 3}},
		{{SKU: "SKU-B", Quantity: 2}, {SKU: "SKU-A", Quantity: 1}},
		{{SKU: "SKU-C", Quantity: 1}, {SKU: "SKU-B", Quantity: 4}, {SKU: "SKU-A", Quantity: 2}},
	}
)

// orderAmounts runs the scenario orderAmounts of spec/placement.go, which
// says what it does and what its metrics mean.
func orderAmounts(ctx context.Context, e *Env) error {
	price := map[string]int64{}
	for _, p := range amountPrices {
		if err := e.seedPriced(ctx, p.sku, 20, p.price); err != nil {
			return err
		}
		price[p.sku] = p.price
	}
	cl, err := e.Orders()
	if err != nil {
		return err
	}
	var off int64
	for i, lines := range amountOrders {
		req := orders.PlaceRequest{Lines: lines}
		if len(lines) == 1 {
			req = orders.PlaceRequest{SKU: lines[0].SKU, Quantity: lines[0].Quantity}
		}
		res, err := e.post(ctx, cl, e.userToken(principal), fmt.Sprintf("amounts-%d", i+1), req)
		if err != nil {
			return err
		}
		if res.Order == nil {
			continue // not placed: orders and lines say so
		}
		var want int64
		for _, l := range lines {
			want += int64(l.Quantity) * price[l.SKU]
		}
		wrong, err := e.amountOff(ctx, res.Order.OrderID, want)
		if err != nil {
			return err
		}
		if wrong {
			off++
		}
	}
	c, err := e.counts(ctx)
	if err != nil {
		return err
	}
	total, err := e.QueryInt(ctx, `SELECT COALESCE(SUM(amount_cents), 0) FROM orders`)
	if err != nil {
		return err
	}
	e.Result.Metric("orders", c.orders)
	e.Result.Metric("lines", c.lines)
	e.Result.Metric("amountCents", total)
	e.Result.Metric("amountsOff", off)
	return nil
}

// amountOff tells whether order id's amount differs from want (what the
// lines asked for cost at the seeded prices) or from the sum of its own
// lines' quantity times unit price.
func (e *Env) amountOff(ctx context.Context, id, want int64) (bool, error) {
	var amount, lines int64
	err := e.DB.QueryRowContext(ctx, `SELECT o.amount_cents, COALESCE(SUM(l.quantity * l.price_cents), 0)
  FROM orders o LEFT JOIN order_lines l ON l.order_id = o.id WHERE o.id = ? GROUP BY o.id, o.amount_cents`, id).Scan(&amount, &lines)
	if err != nil {
		return false, fmt.Errorf("read the amount of order %d: %w", id, err)
	}
	return amount != want || amount != lines, nil
}
