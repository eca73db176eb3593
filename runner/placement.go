package runner

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// placementRuns are the scenarios this file runs, by id (runs). Order
// placement (spec/placement.go): the order transaction, idempotency keys and
// stock, driven over HTTP as a client would.
var placementRuns = map[string]runFunc{
	"placement":            placement,
	"idempotentReplay":     idempotentReplay,
	"keyReuseOtherBody":    keyReuseOtherBody,
	"concurrentDuplicates": concurrentDuplicates,
	"insufficientStock":    insufficientStock,
	"noOversell":           noOversell,
	"generatedLoad":        generatedLoad,
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

// placement runs the scenario placement of spec/placement.go, which says
// what it does and what its metrics mean.
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
	e.Result.Metric("status", res.Status)
	e.Result.Metric("orders", c.orders)
	e.Result.Metric("stock", c.stock)
	e.Result.Metric("idemRows", c.idem)
	e.Result.Metric("outbox", c.outbox)
	return nil
}

// idempotentReplay runs the scenario idempotentReplay of spec/placement.go,
// which says what it does and what its metrics mean.
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
	e.Result.Metric("status", first.Status)
	e.Result.Metric("replayStatus", second.Status)
	e.Result.Metric("sameOrder", same)
	e.Result.Metric("orders", c.orders)
	e.Result.Metric("idemRows", c.idem)
	return nil
}

// keyReuseOtherBody runs the scenario keyReuseOtherBody of
// spec/placement.go, which says what it does and what its metrics mean.
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
	e.Result.Metric("status", res.Status)
	e.Result.Metric("orders", after.orders)
	e.Result.Metric("idemRows", after.idem)
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

// concurrentDuplicates runs the scenario concurrentDuplicates of
// spec/placement.go, which says what it does and what its metrics mean.
func concurrentDuplicates(ctx context.Context, e *Env) error {
	const n = 10
	cl, err := e.setupOrders(ctx, 100)
	if err != nil {
		return err
	}
	cl2, err := e.OrdersReplica("orders-b")
	if err != nil {
		return err
	}
	if e.Faults == nil {
		e.Faults = &fault.Injector{}
	}
	e.Faults.ArmFunc(spec.IdemChecked, 2, barrier(2, 2*time.Second))
	defer e.Faults.Disarm(spec.IdemChecked)
	results, err := e.concurrently(n, func(i int) (orders.Result, error) {
		return e.placeOne(ctx, []*orders.Client{cl, cl2}[i%2], "dup-key", 1)
	})
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
	e.Result.Metric("requests", answered(results))
	e.Result.Metric("orders", ords)
	e.Result.Metric("distinctOrderIds", len(ids))
	e.Result.Metric("created", created)
	return nil
}

// barrier returns a function that returns once n callers called it, or
// after wait (the callers that came are then let go).
func barrier(n int, wait time.Duration) func() error {
	var mu sync.Mutex
	came := 0
	all := make(chan struct{})
	return func() error {
		mu.Lock()
		if came++; came == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(wait):
		}
		return nil
	}
}

// insufficientStock runs the scenario insufficientStock of
// spec/placement.go, which says what it does and what its metrics mean.
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
	e.Result.Metric("status", res.Status)
	e.Result.Metric("stock", c.stock)
	e.Result.Metric("orders", c.orders)
	e.Result.Metric("idemRows", c.idem)
	return nil
}

// noOversell runs the scenario noOversell of spec/placement.go, which says
// what it does and what its metrics mean.
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
	e.Result.Metric("requests", answered(results))
	e.Result.Metric("accepted", accepted)
	e.Result.Metric("rejected", rejected)
	e.Result.Metric("stock", left)
	return nil
}
