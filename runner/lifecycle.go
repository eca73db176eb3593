package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// lifecycleRuns are the scenarios this file runs, by id (runs). Several
// events per order (spec/consumer.go).
var lifecycleRuns = map[string]runFunc{
	"orderLifecycle": orderLifecycle,
}

// lifecyclePartitions is the partition count of orderLifecycle's topic:
// keyed by order id 1..4, kgo's murmur2 partitioner puts the orders on
// partitions 0, 2, 2 and 1.
const lifecyclePartitions = 3

// lifecycleSteps are the statuses an order goes through after it was
// placed (PLACED, version 1), with their aggregate versions.
var lifecycleSteps = []struct {
	from, to string
	version  int64
}{{"PLACED", "PAID", 2}, {"PAID", "SHIPPED", 3}}

// orderLifecycle runs the scenario orderLifecycle of spec/consumer.go, which
// says what it does and what its metrics mean.
func orderLifecycle(ctx context.Context, e *Env) error {
	const n = 4
	topic, err := e.topicN(ctx, "", lifecyclePartitions)
	if err != nil {
		return err
	}
	placed, err := e.placeN(ctx, "life", n)
	if err != nil {
		return err
	}
	for _, step := range lifecycleSteps {
		for _, o := range placed {
			if err := e.advanceOrder(ctx, o.OrderID, step.from, step.to, step.version); err != nil {
				return err
			}
		}
	}
	if err := e.relayRound(ctx, topic); err != nil {
		return err
	}
	c, err := e.Consumer(ctx, "consumer-1", topic, "notify-"+e.RunID, nil)
	if err != nil {
		return err
	}
	if _, err := e.drain(ctx, c, topic); err != nil {
		return err
	}
	return e.measureLifecycle(ctx, topic)
}

// advanceOrder moves an order from status from to status to and writes the
// intent of that change (version, event id e-<id>-v<version>) in the same
// transaction, as the order service's status change would.
func (e *Env) advanceOrder(ctx context.Context, orderID int64, from, to string, version int64) (err error) {
	eventID := evidence.EventIDForVersion(orderID, version)
	payload, err := json.Marshal(map[string]any{"orderId": orderID, "status": to, "aggregateVersion": version})
	if err != nil {
		return err
	}
	tx, err := e.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("advance order %d to %s: %w", orderID, to, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	res, err := tx.ExecContext(ctx, `UPDATE orders SET status = ? WHERE id = ? AND status = ?`, to, orderID, from)
	if err != nil {
		return fmt.Errorf("advance order %d to %s: %w", orderID, to, err)
	}
	if rows, err := res.RowsAffected(); err != nil || rows != 1 {
		return fmt.Errorf("advance order %d from %s to %s: %d rows (%v)", orderID, from, to, rows, err)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state) VALUES (?, ?, ?, ?, ?)`,
		eventID, orderID, version, string(payload), evidence.StatePending); err != nil {
		return fmt.Errorf("advance order %d: intent %s: %w", orderID, eventID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("advance order %d to %s: commit: %w", orderID, to, err)
	}
	return e.Emit(evidence.Event{Kind: evidence.KindOrderAdvanced, OrderID: evidence.Ptr(orderID), EventID: eventID,
		AggregateVersion: evidence.Ptr(version), OrderStatus: to, Writes: []string{evidence.WriteOrders, evidence.WriteOutbox}})
}

// measureLifecycle records orderLifecycle's metrics: rows counted, the
// records the broker holds, and effects applied out of version order
// (notifications of an order written after one of a higher version).
func (e *Env) measureLifecycle(ctx context.Context, topic string) error {
	orders, err := e.Count(ctx, "orders", "")
	if err != nil {
		return err
	}
	intents, err := e.Count(ctx, "outbox", "")
	if err != nil {
		return err
	}
	recs, err := e.Records(ctx, topic, int(intents))
	if err != nil {
		return err
	}
	parts := map[int32]bool{}
	orderParts := map[string]map[int32]bool{}
	for _, r := range recs {
		parts[r.Partition] = true
		if orderParts[string(r.Key)] == nil {
			orderParts[string(r.Key)] = map[int32]bool{}
		}
		orderParts[string(r.Key)][r.Partition] = true
	}
	split := 0
	for _, ps := range orderParts {
		if len(ps) > 1 {
			split++
		}
	}
	outOfOrder, err := e.effectsOutOfVersion(ctx)
	if err != nil {
		return err
	}
	effects, err := e.Count(ctx, "notification", "")
	if err != nil {
		return err
	}
	e.Result.Metric("orders", orders)
	e.Result.Metric("intents", intents)
	e.Result.Metric("partitions", len(parts))
	e.Result.Metric("splitOrders", split)
	e.Result.Metric("outOfOrder", outOfOrder)
	e.Result.Metric("effects", effects)
	return nil
}

// effectsOutOfVersion counts the notifications of an order committed after
// a notification (of the same consumer) of a higher version of it.
func (e *Env) effectsOutOfVersion(ctx context.Context) (int64, error) {
	return e.QueryInt(ctx, `SELECT COUNT(DISTINCT b.id) FROM notification b
  JOIN outbox ob ON ob.event_id = b.event_id
  JOIN notification a ON a.order_id = b.order_id AND a.consumer = b.consumer AND a.id < b.id
  JOIN outbox oa ON oa.event_id = a.event_id
 WHERE oa.aggregate_version > ob.aggregate_version`)
}
