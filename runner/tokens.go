package runner

import (
	"context"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
)

// tokenRuns are the scenarios this file runs, by id (runs). Bearer tokens
// (spec/tokens.go).
var tokenRuns = map[string]runFunc{
	"tokenMissing":      tokenScenario(noToken),
	"tokenBadSignature": tokenScenario(badSignature),
	"tokenExpired":      tokenScenario(expiredToken),
	"tokenWrongAlg":     tokenScenario(wrongAlgToken),
	"tokenClaims":       tokenClaims,
}

// otherKey is an HS256 secret of the right size that is not the
// service's.
var otherKey = []byte("another-key-of-32-bytes-length!!")

// The four ways a bearer token must be refused that have a scenario each,
// each run by tokenScenario.

// noToken sends no token (tokenMissing).
func noToken(*Env) *tokenSpec { return nil }

// badSignature signs with another key (tokenBadSignature).
func badSignature(e *Env) *tokenSpec {
	t := e.userToken(principal)
	t.key, t.keyName = otherKey, keyOther
	return t
}

// expiredToken expired a minute ago (tokenExpired).
func expiredToken(e *Env) *tokenSpec {
	t := e.userToken(principal)
	t.claims.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Minute))
	return t
}

// wrongAlgToken is signed with HS512 by the right key (tokenWrongAlg).
func wrongAlgToken(e *Env) *tokenSpec {
	t := e.userToken(principal)
	t.method = jwt.SigningMethodHS512
	return t
}

// claimCases are the tokens of tokenClaims, each signed as the service
// wants but for one claim (or its alg), under the metric that reports its
// answer; the metric's name is the request's idempotency key.
var claimCases = []struct {
	metric string
	mod    func(t *tokenSpec)
}{
	{"algNone", func(t *tokenSpec) {
		t.method, t.key, t.keyName = jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, keyNone
	}},
	{"noExp", func(t *tokenSpec) { t.claims.ExpiresAt = nil }},
	{"notYetValid", func(t *tokenSpec) { t.claims.NotBefore = jwt.NewNumericDate(time.Now().Add(5 * time.Minute)) }},
	{"wrongIssuer", func(t *tokenSpec) { t.claims.Issuer = "someone-else" }},
	{"wrongAudience", func(t *tokenSpec) { t.claims.Audience = jwt.ClaimStrings{"billing"} }},
}

// tokenScenario runs a scenario of one bad token of spec/tokens.go
// (tokenMissing, tokenBadSignature, tokenExpired, tokenWrongAlg): one
// request with the token token makes.
func tokenScenario(token func(*Env) *tokenSpec) func(context.Context, *Env) error {
	return func(ctx context.Context, e *Env) error {
		cl, err := e.setupOrders(ctx, 10)
		if err != nil {
			return err
		}
		before, err := e.counts(ctx)
		if err != nil {
			return err
		}
		res, err := e.post(ctx, cl, token(e), "token-1", orders.PlaceRequest{SKU: defaultSKU, Quantity: 1})
		if err != nil {
			return err
		}
		after, err := e.counts(ctx)
		if err != nil {
			return err
		}
		e.Result.Metric("status", res.Status)
		e.Result.Metric("writes", before.writesTo(after))
		return nil
	}
}

// claimCase returns the change of claimCases named name (the chaos load
// sends them too: nemesis.BadTokens); an unknown name changes nothing.
func claimCase(name string) func(*tokenSpec) {
	for _, c := range claimCases {
		if c.metric == name {
			return c.mod
		}
	}
	return func(*tokenSpec) {}
}

// tokenClaims runs the scenario tokenClaims of spec/tokens.go, which says
// what it does and what its metrics mean.
// It sends the five tokens of claimCases, one request each.
func tokenClaims(ctx context.Context, e *Env) error {
	cl, err := e.setupOrders(ctx, 10)
	if err != nil {
		return err
	}
	before, err := e.counts(ctx)
	if err != nil {
		return err
	}
	statuses := make([]int, len(claimCases))
	for i, tc := range claimCases {
		t := e.userToken(principal)
		tc.mod(t)
		res, err := e.post(ctx, cl, t, tc.metric, orders.PlaceRequest{SKU: defaultSKU, Quantity: 1})
		if err != nil {
			return err
		}
		statuses[i] = res.Status
	}
	after, err := e.counts(ctx)
	if err != nil {
		return err
	}
	for i, tc := range claimCases {
		e.Result.Metric(tc.metric, statuses[i])
	}
	e.Result.Metric("writes", before.writesTo(after))
	return nil
}

// writesTo counts the rows added to orders, order_lines,
// idempotency_records and outbox between c and after, plus how far the
// total stock moved.
func (c counts) writesTo(after counts) int64 {
	return (after.orders - c.orders) + (after.lines - c.lines) + (after.idem - c.idem) +
		(after.outbox - c.outbox) + abs(after.stock-c.stock)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
