package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
)

func init() {
	bind("txBoundaryRollback", txBoundaryRollback)
	bind("normalChain", normalChain)
	bind("sendBeforeMarkCrash", sendBeforeMarkCrash)
	bind("offsetReplay", offsetReplay)
	bind("businessInvariants", businessInvariants)
}

// placeOne places one order with a fresh idempotency key.
func (e *Env) placeOne(ctx context.Context, cl *orders.Client, key string, qty int) (orders.Result, error) {
	tok, err := e.Token()
	if err != nil {
		return orders.Result{}, err
	}
	return cl.Place(ctx, tok, key, orders.PlaceRequest{SKU: defaultSKU, Quantity: qty})
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

func txBoundaryRollback(ctx context.Context, e *Env) error {
	const stock = 10
	if err := e.SeedStock(ctx, defaultSKU, stock); err != nil {
		return err
	}
	// The next order id, so that the decoy takes its intent's event id.
	next, err := e.QueryInt(ctx, `SELECT AUTO_INCREMENT FROM information_schema.TABLES
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'orders'`)
	if err != nil || next < 1 {
		if next, err = e.QueryInt(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM orders`); err != nil {
			return err
		}
	}
	decoyID := evidence.EventIDFor(next)
	if _, err := e.DB.ExecContext(ctx, `INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state)
  VALUES (?, -1, 1, '{"decoy":true}', 'PENDING')`, decoyID); err != nil {
		return fmt.Errorf("seed decoy: %w", err)
	}
	before, err := e.readOutbox(ctx, decoyID)
	if err != nil {
		return err
	}
	if err := e.Emit(evidence.Event{
		Kind: evidence.KindSeedOutbox, EventID: decoyID, OrderID: evidence.Ptr(before.AggregateID),
		State: before.State, ClaimVersion: evidence.Ptr(before.ClaimVersion), PayloadSHA256: sha256Hex(before.Payload),
	}); err != nil {
		return err
	}

	cl, err := e.Orders()
	if err != nil {
		return err
	}
	res, err := e.placeOne(ctx, cl, "tx-boundary-1", 2)
	if err != nil {
		return err
	}
	// The injection must really have happened: the order transaction
	// reached its last write and the unique key refused it.
	if res.Status != 500 {
		e.Result.Failf("order answered %d (%s), want 500 from the unique conflict on the decoy %s", res.Status, res.Error, decoyID)
	}
	if ok, err := e.rolledBackOn(decoyID); err != nil {
		return err
	} else if !ok {
		e.Result.Failf("the order service recorded no rollback of the intent %s on a duplicate key (1062)", decoyID)
	}

	left, err := e.QueryInt(ctx, `SELECT quantity FROM stock WHERE sku = ?`, defaultSKU)
	if err != nil {
		return err
	}
	idem, err := e.Count(ctx, "idempotency_records", "")
	if err != nil {
		return err
	}
	intents, err := e.Count(ctx, "outbox", "aggregate_id <> -1")
	if err != nil {
		return err
	}
	ords, err := e.Count(ctx, "orders", "")
	if err != nil {
		return err
	}
	lines, err := e.Count(ctx, "order_lines", "")
	if err != nil {
		return err
	}
	after, err := e.readOutbox(ctx, decoyID)
	if err != nil {
		return err
	}
	if _, err := e.Observe(ctx, decoyID); err != nil {
		return err
	}
	if ords != 0 || lines != 0 {
		e.Result.Failf("rolled-back order left %d orders and %d order lines", ords, lines)
	}
	e.Result.Metric("stock", left)
	e.Result.Metric("idemRows", idem)
	e.Result.Metric("outboxRollback", intents == 0)
	e.Result.Metric("seedUntouched", before.equal(after))
	return nil
}

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

func sendBeforeMarkCrash(ctx context.Context, e *Env) error {
	topic, placed, err := e.startChain(ctx, "crash", 1)
	if err != nil {
		return err
	}
	order := placed[0]

	// Relay A claims v1, publishes, and dies before its mark.
	faultsA := &fault.Injector{}
	faultsA.Arm(fault.AfterPublishBeforeMark, fault.Crash, 1)
	a, err := e.Relay("relay-a", topic, faultsA)
	if err != nil {
		return err
	}
	resA, err := a.RunOnce(ctx)
	if !errors.Is(err, fault.ErrCrash) || resA.Crashed == nil {
		return fmt.Errorf("relay A did not crash after publishing: %v", err)
	}
	claimA := *resA.Crashed

	// The lease runs out (aged by SQL, as the clock would after A died).
	if _, err := e.ExpireLease(ctx, claimA); err != nil {
		return err
	}

	// Relay B takes over with v2 and publishes the same event id again.
	b, err := e.Relay("relay-b", topic, nil)
	if err != nil {
		return err
	}
	claimsB, err := b.Claim(ctx, 1)
	if err != nil {
		return err
	}
	if len(claimsB) != 1 || claimsB[0].EventID != order.EventID {
		return fmt.Errorf("relay B claimed %d intents, want the expired %s", len(claimsB), order.EventID)
	}
	if claimsB[0].ClaimVersion != claimA.ClaimVersion+1 {
		e.Result.Failf("takeover claim_version %d, want %d", claimsB[0].ClaimVersion, claimA.ClaimVersion+1)
	}
	if _, _, err := b.Publish(ctx, claimsB[0]); err != nil {
		return err
	}
	// A comes back and tries its stale mark; then B marks.
	oldRows, err := a.Mark(ctx, claimA)
	if err != nil {
		return err
	}
	newRows, err := b.Mark(ctx, claimsB[0])
	if err != nil {
		return err
	}
	if newRows != 1 {
		e.Result.Failf("relay B's mark hit %d rows, want 1", newRows)
	}

	m, err := e.measureTakeover(ctx, topic, order.EventID)
	if err != nil {
		return err
	}
	e.Result.Metric("deliveries", m.deliveries)
	e.Result.Metric("businessEffects", m.effects)
	e.Result.Metric("oldTokenCas", oldRows)
	e.Result.Metric("state", m.state)
	return nil
}

func offsetReplay(ctx context.Context, e *Env) error {
	topic, placed, err := e.startChain(ctx, "replay", 1)
	if err != nil {
		return err
	}
	order := placed[0]
	r, err := e.Relay("relay-a", topic, nil)
	if err != nil {
		return err
	}
	if res, err := r.RunOnce(ctx); err != nil || res.Marked != 1 {
		return fmt.Errorf("relay round: marked %d: %v", res.Marked, err)
	}

	group := "notify-" + e.RunID
	faults1 := &fault.Injector{}
	faults1.Arm(fault.AfterEffectBeforeOffsetCommit, fault.Crash, 1)
	c1, err := e.Consumer(ctx, "consumer-1", topic, group, faults1)
	if err != nil {
		return err
	}
	_, err = e.poll(ctx, c1, func(s consumer.Stats) bool { return s.Effects >= 1 })
	if !errors.Is(err, fault.ErrCrash) {
		return fmt.Errorf("consumer 1 did not stop between effect and offset commit: %v", err)
	}
	c1.Close()

	c2, err := e.Consumer(ctx, "consumer-2", topic, group, nil)
	if err != nil {
		return err
	}
	st, err := e.drain(ctx, c2, topic)
	if err != nil {
		return err
	}
	effects, err := e.Count(ctx, "notification", "event_id = ?", order.EventID)
	if err != nil {
		return err
	}
	e.Result.Metric("replay", st.Received)
	e.Result.Metric("inboxRejected", st.InboxRejected >= 1)
	e.Result.Metric("effects", effects)
	return nil
}

func businessInvariants(ctx context.Context, e *Env) error {
	const n = 3
	topic, _, err := e.startChain(ctx, "inv", n)
	if err != nil {
		return err
	}
	r, err := e.Relay("relay-a", topic, nil)
	if err != nil {
		return err
	}
	if _, err := r.RunOnce(ctx); err != nil {
		return err
	}
	c, err := e.Consumer(ctx, "consumer-1", topic, "notify-"+e.RunID, nil)
	if err != nil {
		return err
	}
	if _, err := e.drain(ctx, c, topic); err != nil {
		return err
	}
	sent, err := e.Count(ctx, "outbox", "state = 'SENT'")
	if err != nil {
		return err
	}
	effects, err := e.Count(ctx, "notification", "")
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
