package runner

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
)

func init() {
	u79 := func(id, desc string, run func(context.Context, *Env) error) {
		register(Scenario{ID: id, Suite: SuiteU79, Boundary: evidence.BoundaryNone, Description: desc, Run: run})
	}
	u79("placement", "one order of quantity 2: five writes in one transaction", placement)
	u79("idempotentReplay", "the same key and body again: the stored answer, no new writes", idempotentReplay)
	u79("keyReuseOtherBody", "the same key with another body: 422, no writes", keyReuseOtherBody)
	u79("concurrentDuplicates", "10 concurrent requests with one key create exactly one order", concurrentDuplicates)
	u79("insufficientStock", "quantity 2 against stock 1: 409, the transaction rolls back", insufficientStock)
	u79("noOversell", "20 concurrent orders of quantity 1 against stock 10: exactly 10 accepted", noOversell)
	for _, tc := range tokenCases {
		u79(tc.id, tc.desc, tokenScenario(tc.token))
	}
}

// counts are the rows the order transaction writes.
type counts struct{ orders, lines, idem, outbox, stock int64 }

func (e *Env) counts(ctx context.Context) (counts, error) {
	var c counts
	for _, q := range []struct {
		dst   *int64
		query string
	}{
		{&c.orders, `SELECT COUNT(*) FROM orders`},
		{&c.lines, `SELECT COUNT(*) FROM order_lines`},
		{&c.idem, `SELECT COUNT(*) FROM idempotency_records`},
		{&c.outbox, `SELECT COUNT(*) FROM outbox`},
		{&c.stock, `SELECT COALESCE(SUM(quantity), 0) FROM stock`},
	} {
		n, err := e.QueryInt(ctx, q.query)
		if err != nil {
			return c, err
		}
		*q.dst = n
	}
	return c, nil
}

// setupOrders seeds stock and starts the order service.
func (e *Env) setupOrders(ctx context.Context, stock int64) (*orders.Client, error) {
	if err := e.SeedStock(ctx, defaultSKU, stock); err != nil {
		return nil, err
	}
	return e.Orders()
}

func placement(ctx context.Context, e *Env) error {
	cl, err := e.setupOrders(ctx, 10)
	if err != nil {
		return err
	}
	res, err := e.placeOne(ctx, cl, "place-1", 2)
	if err != nil {
		return err
	}
	c, err := e.counts(ctx)
	if err != nil {
		return err
	}
	e.Result.Expect("status", res.Status, http.StatusCreated)
	e.Result.Expect("orders", c.orders, 1)
	e.Result.Expect("stock", c.stock, 8)
	e.Result.Expect("idemRows", c.idem, 1)
	e.Result.Expect("outbox", c.outbox, 1)
	return nil
}

func idempotentReplay(ctx context.Context, e *Env) error {
	cl, err := e.setupOrders(ctx, 10)
	if err != nil {
		return err
	}
	first, err := e.placeOne(ctx, cl, "replay-key", 1)
	if err != nil {
		return err
	}
	second, err := e.placeOne(ctx, cl, "replay-key", 1)
	if err != nil {
		return err
	}
	c, err := e.counts(ctx)
	if err != nil {
		return err
	}
	same := first.Order != nil && second.Order != nil && first.Order.OrderID == second.Order.OrderID &&
		string(first.Body) == string(second.Body)
	e.Result.Expect("status", first.Status, http.StatusCreated)
	e.Result.Expect("replayStatus", second.Status, http.StatusCreated)
	e.Result.Expect("sameOrder", same, true)
	e.Result.Expect("orders", c.orders, 1)
	e.Result.Expect("idemRows", c.idem, 1)
	return nil
}

func keyReuseOtherBody(ctx context.Context, e *Env) error {
	cl, err := e.setupOrders(ctx, 10)
	if err != nil {
		return err
	}
	if _, err := e.placeCommitted(ctx, cl, "reuse-key"); err != nil {
		return err
	}
	before, err := e.counts(ctx)
	if err != nil {
		return err
	}
	res, err := e.placeOne(ctx, cl, "reuse-key", 3)
	if err != nil {
		return err
	}
	after, err := e.counts(ctx)
	if err != nil {
		return err
	}
	if after != before {
		e.Result.Failf("key reuse with another body wrote rows: %+v -> %+v", before, after)
	}
	e.Result.Expect("status", res.Status, http.StatusUnprocessableEntity)
	e.Result.Expect("orders", after.orders, 1)
	e.Result.Expect("idemRows", after.idem, 1)
	return nil
}

// concurrently runs n requests at once and returns their results in
// request order. The goroutines start in an order drawn from the scenario's
// seeded random source, so --seed chooses the interleaving that is tried.
func (e *Env) concurrently(n int, f func(i int) (orders.Result, error)) ([]orders.Result, error) {
	results := make([]orders.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, i := range e.Rand.Perm(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return results, err
		}
	}
	return results, nil
}

// answered counts the requests that got an HTTP answer.
func answered(results []orders.Result) int {
	n := 0
	for _, r := range results {
		if r.Status != 0 {
			n++
		}
	}
	return n
}

func concurrentDuplicates(ctx context.Context, e *Env) error {
	const n = 10
	cl, err := e.setupOrders(ctx, 100)
	if err != nil {
		return err
	}
	results, err := e.concurrently(n, func(int) (orders.Result, error) { return e.placeOne(ctx, cl, "dup-key", 1) })
	if err != nil {
		return err
	}
	ids := map[int64]bool{}
	for _, r := range results {
		if r.Order != nil {
			ids[r.Order.OrderID] = true
		} else if r.Status != http.StatusConflict {
			e.Result.Failf("a duplicate got status %d (%s), want 201 or 409", r.Status, r.Error)
		}
	}
	ords, err := e.Count(ctx, "orders", "")
	if err != nil {
		return err
	}
	created, err := e.Count(ctx, "idempotency_records", "idem_key = ?", "dup-key")
	if err != nil {
		return err
	}
	e.Result.Expect("requests", answered(results), n)
	e.Result.Expect("orders", ords, 1)
	e.Result.Expect("distinctOrderIds", len(ids), 1)
	e.Result.Expect("created", created, 1)
	return nil
}

func insufficientStock(ctx context.Context, e *Env) error {
	cl, err := e.setupOrders(ctx, 1)
	if err != nil {
		return err
	}
	res, err := e.placeOne(ctx, cl, "short-1", 2)
	if err != nil {
		return err
	}
	c, err := e.counts(ctx)
	if err != nil {
		return err
	}
	e.Result.Expect("status", res.Status, http.StatusConflict)
	e.Result.Expect("stock", c.stock, 1)
	e.Result.Expect("orders", c.orders, 0)
	e.Result.Expect("idemRows", c.idem, 0)
	return nil
}

func noOversell(ctx context.Context, e *Env) error {
	const n, stock = 20, 10
	cl, err := e.setupOrders(ctx, stock)
	if err != nil {
		return err
	}
	results, err := e.concurrently(n, func(i int) (orders.Result, error) {
		return e.placeOne(ctx, cl, fmt.Sprintf("oversell-%02d", i), 1)
	})
	if err != nil {
		return err
	}
	var accepted, rejected int
	for _, r := range results {
		switch r.Status {
		case http.StatusCreated:
			accepted++
		case http.StatusConflict:
			rejected++
		default:
			e.Result.Failf("an order got status %d (%s)", r.Status, r.Error)
		}
	}
	left, err := e.QueryInt(ctx, `SELECT quantity FROM stock WHERE sku = ?`, defaultSKU)
	if err != nil {
		return err
	}
	e.Result.Expect("requests", answered(results), n)
	e.Result.Expect("accepted", accepted, stock)
	e.Result.Expect("rejected", rejected, n-stock)
	e.Result.Expect("stock", left, 0)
	return nil
}

// tokenCases are the four ways a bearer token must be refused.
var tokenCases = []struct {
	id, desc string
	token    func(secret []byte) (string, error)
}{
	{"tokenMissing", "no Authorization header: 401, zero writes",
		func([]byte) (string, error) { return "", nil }},
	{"tokenBadSignature", "HS256 token signed with another key: 401, zero writes",
		func([]byte) (string, error) {
			return orders.SignToken([]byte("another-key-of-32-bytes-length!!"), principal, time.Now().Add(time.Minute))
		}},
	{"tokenExpired", "HS256 token expired a minute ago: 401, zero writes",
		func(secret []byte) (string, error) {
			return orders.SignToken(secret, principal, time.Now().Add(-time.Minute))
		}},
	{"tokenWrongAlg", "token signed with HS512 by the right key (alg is not HS256): 401, zero writes",
		func(secret []byte) (string, error) {
			return orders.SignTokenWith(jwt.SigningMethodHS512, secret, principal, time.Now().Add(time.Minute))
		}},
}

func tokenScenario(token func([]byte) (string, error)) func(context.Context, *Env) error {
	return func(ctx context.Context, e *Env) error {
		cl, err := e.setupOrders(ctx, 10)
		if err != nil {
			return err
		}
		before, err := e.counts(ctx)
		if err != nil {
			return err
		}
		tok, err := token(e.Secret)
		if err != nil {
			return err
		}
		res, err := cl.Place(ctx, tok, "token-1", orders.PlaceRequest{SKU: defaultSKU, Quantity: 1})
		if err != nil {
			return err
		}
		after, err := e.counts(ctx)
		if err != nil {
			return err
		}
		writes := (after.orders - before.orders) + (after.lines - before.lines) + (after.idem - before.idem) +
			(after.outbox - before.outbox) + abs(after.stock-before.stock)
		e.Result.Expect("status", res.Status, http.StatusUnauthorized)
		e.Result.Expect("writes", writes, 0)
		return nil
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
