package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/genload"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// generatedLoad runs the scenario generatedLoad of spec/placement.go,
// which says what it does and what its metrics mean. The load is
// genload's; the judgement of each answer is the verifier's reference
// model's (checks/model, contract.go): the runner reports what it counted.
func generatedLoad(ctx context.Context, e *Env) error {
	rounds := genload.Generate(genload.Config{Seed: 1})
	st, err := e.sendGenerated(ctx, rounds, 2)
	if err != nil {
		return err
	}
	e.Result.Metric("requests", st.requests)
	e.Result.Metric("created", st.created)
	e.Result.Metric("replays", st.replays)
	e.Result.Metric("refused", st.refused)
	return nil
}

// genStats are what the client counted of a generated load.
type genStats struct{ requests, created, replays, refused int64 }

// seedGenerated seeds genload's catalog and moves the order ids past
// 2^53: ids the BIGINT columns hold and an INT would not, that a JSON
// decoder reading numbers as float64 rounds (2^53 + 1 is the first
// integer a float64 cannot hold), and whose event ids ("e-" and 16
// digits) are longer than 16 characters.
func (e *Env) seedGenerated(ctx context.Context) error {
	for _, it := range genload.Catalog() {
		if err := e.seedPriced(ctx, it.SKU, it.Stock, it.PriceCents); err != nil {
			return err
		}
	}
	if _, err := e.DB.ExecContext(ctx, `ALTER TABLE orders AUTO_INCREMENT = 9007199254740993`); err != nil {
		return fmt.Errorf("move order ids: %w", err)
	}
	return nil
}

// sendGenerated seeds the catalog and sends rounds to replicas replicas
// of the order service (user u to replica u mod replicas), every user's
// request of a round at once, and counts the answers. A request without
// an answer (a transport failure: the service dropped the connection) is
// an error: the contract answers every request.
func (e *Env) sendGenerated(ctx context.Context, rounds [][]genload.Request, replicas int) (genStats, error) {
	var st genStats
	if err := e.seedGenerated(ctx); err != nil {
		return st, err
	}
	cls := make([]*orders.Client, replicas)
	for i := range cls {
		cl, err := e.OrdersReplica(fmt.Sprintf("orders-%d", i+1))
		if err != nil {
			return st, err
		}
		cls[i] = cl
	}
	seen := map[int64]bool{}
	for _, round := range rounds {
		res := make([]orders.Result, len(round))
		errs := make([]error, len(round))
		var wg sync.WaitGroup
		for i, req := range round {
			wg.Go(func() { res[i], errs[i] = e.postGenerated(ctx, cls[req.User%replicas], req, false) })
		}
		wg.Wait()
		for i := range round {
			if errs[i] != nil {
				return st, errs[i]
			}
			st.requests++
			switch o := res[i].Order; {
			case res[i].Status != 201 || o == nil:
				st.refused++
			case seen[o.OrderID]:
				st.replays++
			default:
				seen[o.OrderID] = true
				st.created++
			}
		}
	}
	return st, nil
}

// postGenerated sends one generated request and records it with its
// answer (order_request, with the raw request: auth_prefix, key_headers,
// request_body). A request without an answer is an error, unless
// recordLost: then it is recorded with the transport error (err) instead
// of a status, its outcome unknown (the chaos load's).
func (e *Env) postGenerated(ctx context.Context, cl *orders.Client, req genload.Request, recordLost bool) (orders.Result, error) {
	body := req.Body
	ev := evidence.Event{Kind: evidence.KindOrderRequest, AuthPrefix: req.Auth, KeyHeaders: req.Keys, RequestBody: body}
	header := req.Auth
	if t := req.Token; t != nil {
		raw, err := e.signGenerated(t)
		if err != nil {
			return orders.Result{}, err
		}
		claims, err := json.Marshal(t.Claims)
		if err != nil {
			return orders.Result{}, fmt.Errorf("encode token claims: %w", err)
		}
		header += raw
		ev.TokenAlg, ev.TokenKey, ev.TokenClaims = t.Alg, t.Key, string(claims)
		if sub, ok := t.Claims["sub"].(string); ok && sub != "" && len(sub) <= spec.MaxPrincipalBytes && utf8.ValidString(sub) {
			ev.Principal = sub
		}
	}
	res, err := cl.PlaceHeaders(ctx, header, req.Keys, []byte(body))
	if err != nil && recordLost && ctx.Err() == nil {
		ev.Err = err.Error()
		return res, e.Emit(ev)
	}
	if err != nil {
		return res, fmt.Errorf("generated request of %s: %w", genload.Principals[req.User], err)
	}
	ev.Status, ev.PayloadSHA256 = res.Status, sha256Hex(res.Body)
	if res.Order != nil {
		ev.OrderID = evidence.Ptr(res.Order.OrderID)
	}
	return res, e.Emit(ev)
}

// signGenerated signs a generated token with the key it names.
func (e *Env) signGenerated(t *genload.Token) (string, error) {
	var (
		method jwt.SigningMethod = jwt.GetSigningMethod(t.Alg)
		key    any
	)
	switch t.Key {
	case keyService:
		key = e.Secret
	case keyOther:
		key = otherKey
	case keyNone:
		method, key = jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType
	default:
		return "", fmt.Errorf("generated token: unknown key %q", t.Key)
	}
	if method == nil {
		return "", fmt.Errorf("generated token: unknown alg %q", t.Alg)
	}
	s, err := jwt.NewWithClaims(method, jwt.MapClaims(t.Claims)).SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign generated token (%s): %w", t.Alg, err)
	}
	return s, nil
}
