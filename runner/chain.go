package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
)

// chainRuns are the scenarios this file runs, by id (runs). The chain
// without faults (spec/chain.go).
var chainRuns = map[string]runFunc{
	"normalChain":        normalChain,
	"businessInvariants": businessInvariants,
}

// placeOne places one order of qty of the default SKU for the default
// principal with idempotency key key.
func (e *Env) placeOne(ctx context.Context, cl *orders.Client, key string, qty int) (orders.Result, error) {
	return e.post(ctx, cl, e.userToken(principal), key, orders.PlaceRequest{SKU: defaultSKU, Quantity: qty})
}

// placeCommitted places one order and fails unless it was created.
func (e *Env) placeCommitted(ctx context.Context, cl *orders.Client, key string) (*orders.PlaceResponse, error) {
	res, err := e.placeOne(ctx, cl, key, 1)
	if err != nil {
		return nil, err
	}
	if res.Status != 201 || res.Order == nil {
		return nil, fmt.Errorf("place order %s: status %d %s", key, res.Status, res.Error)
	}
	return res.Order, nil
}

// normalChain runs the scenario normalChain of spec/chain.go, which says
// what it does and what its metrics mean.
func normalChain(ctx context.Context, e *Env) error {
	topic, placed, err := e.startChain(ctx, "normal", 1)
	if err != nil {
		return err
	}
	order := placed[0]
	var states []string
	observe := func() error {
		s, err := e.Observe(ctx, order.EventID)
		if err == nil && (len(states) == 0 || states[len(states)-1] != s) {
			states = append(states, s)
		}
		return err
	}
	if err := observe(); err != nil {
		return err
	}
	r, err := e.Relay("relay-a", topic, nil)
	if err != nil {
		return err
	}
	claims, err := r.Claim(ctx, 1)
	if err != nil {
		return err
	}
	if len(claims) != 1 || claims[0].EventID != order.EventID {
		return fmt.Errorf("relay claimed %d intents, want %s", len(claims), order.EventID)
	}
	if err := observe(); err != nil {
		return err
	}
	if _, _, err := r.Publish(ctx, claims[0]); err != nil {
		return err
	}
	rows, err := r.Mark(ctx, claims[0])
	if err != nil {
		return err
	}
	if rows != 1 {
		e.Result.Failf("mark with the live token hit %d rows, want 1", rows)
	}
	if err := observe(); err != nil {
		return err
	}

	c, err := e.Consumer(ctx, "consumer-1", topic, "notify-"+e.RunID, nil)
	if err != nil {
		return err
	}
	st, err := e.drain(ctx, c, topic)
	if err != nil {
		return err
	}
	deliveries := st.Received
	// A redelivery: the same record fetched again from the broker and
	// handed to the consumer a second time.
	recs, err := e.Records(ctx, topic, 1)
	if err != nil {
		return err
	}
	e.keyedByOrder(recs[0], order)
	out, err := c.Handle(ctx, recs[0])
	if err != nil {
		return err
	}
	blocked := "none"
	if out.Rejected {
		blocked = "unique"
	}
	effects, err := e.Count(ctx, "notification", "event_id = ?", order.EventID)
	if err != nil {
		return err
	}
	e.Result.Metric("outboxTx", strings.Join(states, "→"))
	e.Result.Metric("deliveries", deliveries)
	e.Result.Metric("effects", effects)
	e.Result.Metric("duplicateBlocked", blocked)
	return nil
}

// businessInvariants runs the scenario businessInvariants of spec/chain.go,
// which says what it does and what its metrics mean.
func businessInvariants(ctx context.Context, e *Env) error {
	const n = 3
	topic, _, err := e.startChain(ctx, "inv", n)
	if err != nil {
		return err
	}
	if err := e.relayRound(ctx, topic); err != nil {
		return err
	}
	sent, effects, err := e.consumeAll(ctx, topic)
	if err != nil {
		return err
	}
	inbox, err := e.Count(ctx, "inbox", "")
	if err != nil {
		return err
	}
	linked, err := e.QueryInt(ctx, `SELECT COUNT(*) FROM outbox o JOIN orders r ON r.id = o.aggregate_id WHERE o.state = 'SENT'`)
	if err != nil {
		return err
	}
	e.Result.Metric("sent", sent)
	e.Result.Metric("effects", effects)
	e.Result.Metric("inbox", inbox)
	e.Result.Metric("linkedOrders", linked)
	for _, inv := range []struct{ metric, id string }{
		{"orphanSent", "orphan-sent"},
		{"sentWithoutEffect", "sent-without-effect"},
		{"effectWithoutInbox", "effect-without-inbox"},
		{"duplicatedEffects", "duplicated-effects"},
		{"orphanEffects", "orphan-effects"},
	} {
		rows, err := e.InvariantRows(ctx, inv.id)
		if err != nil {
			return err
		}
		e.Result.Metric(inv.metric, rows)
	}
	return nil
}

// keyedByOrder fails the scenario unless rec, the record of order that the
// broker holds, is keyed by its aggregate, so that the records of one
// order stay on one partition, in order.
func (e *Env) keyedByOrder(rec *kgo.Record, order *orders.PlaceResponse) {
	if want := strconv.FormatInt(order.OrderID, 10); string(rec.Key) != want {
		e.Result.Failf("the record of %s has key %q, want the order id %s", order.EventID, rec.Key, want)
	}
}
