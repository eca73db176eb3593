package runner

import (
	"context"
	"net/http"
	"time"

	chaoseng "github.com/orderflow-audit/orderflow-audit/runner/chaos"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// The chaos scenario's load, as the engine hands it out: each request of
// nemesis.Load is placed with the order service over HTTP. A client
// retries a request with the same Idempotency-Key while the answer is not
// final (no answer, a 5xx, or "key in flight"), as a real client of an
// idempotent API does, until until.

// Send places r until a final answer or until, and says how it ended.
func (cr *chaosRun) Send(ctx context.Context, r nemesis.Request, until time.Time) (chaoseng.Answer, int) {
	cr.startGenerated(ctx)
	cr.mu.Lock()
	cl := &orders.Client{BaseURL: cr.url, HTTP: cr.http}
	cr.mu.Unlock()
	switch status, attempts := cr.place(ctx, cl, r, until); status {
	case http.StatusCreated:
		return chaoseng.Accepted, attempts
	case 0:
		return chaoseng.Unanswered, attempts
	default:
		return chaoseng.Rejected, attempts
	}
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
