package runner

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// The chaos scenario's load: the requests of nemesis.Load, in their order,
// handed to chaosWorkers concurrent clients of the order service over
// HTTP. A client retries a request with the same Idempotency-Key while the
// answer is not final (no answer, a 5xx, or "key in flight"), as a real
// client of an idempotent API does, until until.

// loadStats is what the load got back.
type loadStats struct {
	created, rejected, unanswered, attempts int
}

// startLoad starts the load and returns a channel that receives its stats
// once every request has a final answer or until has passed. Request i of
// n is handed out at t0 + i*duration/n, so that the load lasts as long as
// the faults.
func (cr *chaosRun) startLoad(ctx context.Context, t0, until time.Time) <-chan loadStats {
	out := make(chan loadStats, 1)
	reqs := nemesis.Load(cr.cfg)
	cl := &orders.Client{BaseURL: cr.orders.url, HTTP: &http.Client{Timeout: 3 * time.Second}}
	next := make(chan nemesis.Request)
	go func() {
		defer close(next)
		for i, r := range reqs {
			if !sleepUntil(ctx, t0.Add(cr.cfg.Duration*time.Duration(i)/time.Duration(len(reqs)))) {
				return
			}
			select {
			case next <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	var mu sync.Mutex
	var st loadStats
	var wg sync.WaitGroup
	for range chaosWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				final, attempts := cr.place(ctx, cl, r, until)
				mu.Lock()
				st.attempts += attempts
				switch final {
				case http.StatusCreated:
					st.created++
				case 0:
					st.unanswered++
				default:
					st.rejected++
				}
				mu.Unlock()
			}
		}()
	}
	go func() {
		wg.Wait()
		mu.Lock()
		out <- st
		mu.Unlock()
	}()
	return out
}

// place sends r until a final answer (its status) or until (0).
func (cr *chaosRun) place(ctx context.Context, cl *orders.Client, r nemesis.Request, until time.Time) (status, attempts int) {
	for time.Now().Before(until) && ctx.Err() == nil {
		attempts++
		tok := cr.e.userToken(r.User)
		if r.Token != "" {
			claimCase(r.Token)(tok)
		}
		// The client's record of each answer (order_request), as every
		// scenario's client writes it: the verifier holds the answers to it.
		res, err := cr.e.post(ctx, cl, tok, r.Key, orders.PlaceRequest{SKU: defaultSKU, Quantity: r.Quantity})
		switch {
		case err != nil, res.Status >= 500, res.Status == http.StatusConflict && res.Error != "insufficient stock":
			// No answer, a server error, or the key in flight: not final.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		return res.Status, attempts
	}
	return 0, attempts
}
