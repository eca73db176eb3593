package runner

import (
	"context"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
)

// Bearer tokens (spec/tokens.go): every bad token is refused with 401 and
// no write.
func init() {
	for _, tc := range tokenCases {
		bind(tc.id, tokenScenario(tc.token))
	}
}

// tokenCases are the four ways a bearer token must be refused.
var tokenCases = []struct {
	id    string
	token func(secret []byte) (string, error)
}{
	{"tokenMissing",
		func([]byte) (string, error) { return "", nil }},
	{"tokenBadSignature",
		func([]byte) (string, error) {
			return orders.SignToken([]byte("another-key-of-32-bytes-length!!"), principal, time.Now().Add(time.Minute))
		}},
	{"tokenExpired",
		func(secret []byte) (string, error) {
			return orders.SignToken(secret, principal, time.Now().Add(-time.Minute))
		}},
	{"tokenWrongAlg",
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
		e.Result.Metric("status", res.Status)
		e.Result.Metric("writes", writes)
		return nil
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
