package runner

import (
	"context"
	"fmt"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// commitRuns are the scenarios this file runs, by id (runs). The commit
// boundary (spec/commit.go).
var commitRuns = map[string]runFunc{
	"txBoundaryRollback": txBoundaryRollback,
	"orderCrashWindow":   orderCrashWindow,
}

// seedDecoy inserts a decoy outbox row whose event id is the one the next
// order's intent will take, records it, and returns it as read back.
func (e *Env) seedDecoy(ctx context.Context) (string, outboxRow, error) {
	// The next order id, so that the decoy takes its intent's event id.
	next, err := e.QueryInt(ctx, `SELECT AUTO_INCREMENT FROM information_schema.TABLES
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'orders'`)
	if err != nil || next < 1 {
		if next, err = e.QueryInt(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM orders`); err != nil {
			return "", outboxRow{}, err
		}
	}
	decoyID := evidence.EventIDFor(next)
	if _, err := e.DB.ExecContext(ctx, `INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state)
  VALUES (?, -1, 1, '{"decoy":true}', 'PENDING')`, decoyID); err != nil {
		return "", outboxRow{}, fmt.Errorf("seed decoy: %w", err)
	}
	before, err := e.readOutbox(ctx, decoyID)
	if err != nil {
		return "", outboxRow{}, err
	}
	return decoyID, before, e.Emit(evidence.Event{
		Kind: evidence.KindSeedOutbox, EventID: decoyID, OrderID: evidence.Ptr(before.AggregateID),
		State: before.State, ClaimVersion: evidence.Ptr(before.ClaimVersion), PayloadSHA256: sha256Hex(before.Payload),
	})
}

// txBoundaryRollback runs the scenario txBoundaryRollback of spec/commit.go,
// which says what it does and what its metrics mean.
func txBoundaryRollback(ctx context.Context, e *Env) error {
	const stock = 10
	if err := e.SeedStock(ctx, defaultSKU, stock); err != nil {
		return err
	}
	decoyID, before, err := e.seedDecoy(ctx)
	if err != nil {
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

// orderCrashWindow runs the scenario orderCrashWindow of spec/commit.go,
// which says what it does and what its metrics mean.
func orderCrashWindow(ctx context.Context, e *Env) error {
	if err := e.SeedStock(ctx, defaultSKU, 10); err != nil {
		return err
	}
	e.Faults.Arm(spec.AfterOrderCommitBeforeOutbox, fault.Crash, 1)
	cl, err := e.Orders()
	if err != nil {
		return err
	}
	if _, err := e.placeOne(ctx, cl, "window-1", 1); err != nil {
		return err
	}
	// The order service does not record its own simulated death; the
	// scenario, which armed the point, records that it fired.
	if e.Faults.Hits(spec.AfterOrderCommitBeforeOutbox) > 0 {
		if err := e.Emit(evidence.Event{
			Kind: evidence.KindFault, Point: string(spec.AfterOrderCommitBeforeOutbox),
			Detail: "order service crashed after its order committed, before the intent was written",
		}); err != nil {
			return err
		}
	}
	ords, err := e.Count(ctx, "orders", "")
	if err != nil {
		return err
	}
	intents, err := e.Count(ctx, "outbox", "")
	if err != nil {
		return err
	}
	missing, err := e.InvariantRows(ctx, "order-without-intent")
	if err != nil {
		return err
	}
	e.Result.Metric("orders", ords)
	e.Result.Metric("outbox", intents)
	e.Result.Metric("ordersWithoutIntent", missing)
	return nil
}
