package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
)

// The client side of POST /orders: every request a scenario makes goes
// through post, which records it (order_request) with the answer it got,
// in the scenario driver's log. What the client sent and got is then on
// record apart from the order service's own events, and the verifier holds
// the service's answers to it (business layer): a bad token refused, a 201
// only for an order that committed, for its own user, with the lines asked
// for.

// Token keys, as order_request's token_key names them.
const (
	keyService = "service" // the order service's HS256 secret
	keyOther   = "other"   // another secret of the same size
	keyNone    = "none"    // an unsigned token (alg none)
)

// tokenSpec is a bearer token as a scenario crafts it: its method, the key
// that signs it and its claims. The record of a request says what it was,
// never the token itself.
type tokenSpec struct {
	method  jwt.SigningMethod
	key     any
	keyName string
	claims  jwt.RegisteredClaims
}

// userToken is a valid token of user for five minutes.
func (e *Env) userToken(user string) *tokenSpec {
	return &tokenSpec{method: jwt.SigningMethodHS256, key: e.Secret, keyName: keyService,
		claims: orders.Claims(user, time.Now().Add(5*time.Minute))}
}

// post sends one POST /orders with tok (nil: no Authorization header) and
// key, and records it with its answer. A transport failure is returned
// (the scenario could not run) and not recorded: there is no answer.
func (e *Env) post(ctx context.Context, cl *orders.Client, tok *tokenSpec, key string, req orders.PlaceRequest) (orders.Result, error) {
	ev := evidence.Event{Kind: evidence.KindOrderRequest, Key: key}
	var raw string
	if tok != nil {
		s, err := orders.SignClaims(tok.method, tok.key, tok.claims)
		if err != nil {
			return orders.Result{}, err
		}
		claims, err := json.Marshal(tok.claims)
		if err != nil {
			return orders.Result{}, fmt.Errorf("encode token claims: %w", err)
		}
		raw = s
		ev.Principal, ev.TokenAlg, ev.TokenKey, ev.TokenClaims = tok.claims.Subject, tok.method.Alg(), tok.keyName, string(claims)
	}
	for _, l := range req.OrderLines() {
		ev.Lines = append(ev.Lines, evidence.OrderLine{SKU: l.SKU, Quantity: int64(l.Quantity)}.String())
	}
	res, err := cl.Place(ctx, raw, key, req)
	if err != nil {
		return res, err
	}
	ev.Status, ev.PayloadSHA256 = res.Status, sha256Hex(res.Body)
	if res.Order != nil {
		ev.OrderID = evidence.Ptr(res.Order.OrderID)
	}
	return res, e.Emit(ev)
}
