package runner

import (
	"context"
	"fmt"

	"github.com/orderflow-audit/orderflow-audit/runner/sut"
)

// restartRuns are the scenarios this file runs, by id (runs). A consumer
// restart after clean commits (spec/consumer.go).
var restartRuns = map[string]runFunc{
	"consumerRestart": consumerRestart,
}

// consumerRestart runs the scenario consumerRestart of spec/consumer.go,
// which says what it does and what its metrics mean.
func consumerRestart(ctx context.Context, e *Env) error {
	topic, err := e.Topic(ctx, "")
	if err != nil {
		return err
	}
	cl, _, err := e.placeOrders(ctx, "restart", 2)
	if err != nil {
		return err
	}
	r, err := e.Relay("relay-a", topic, nil)
	if err != nil {
		return err
	}
	claims, err := r.Claim(ctx, 2)
	if err != nil {
		return err
	}
	if len(claims) != 2 {
		return fmt.Errorf("relay claimed %d intents, want 2", len(claims))
	}
	// e-2 twice: a producer retry that the broker appended twice.
	for _, c := range []sut.Claimed{claims[0], claims[1], claims[1]} {
		if _, _, err := r.Publish(ctx, c); err != nil {
			return err
		}
	}
	for _, c := range claims {
		if _, err := r.Mark(ctx, c); err != nil {
			return err
		}
	}
	group := "notify-" + e.RunID
	c1, err := e.Consumer(ctx, "consumer-1", topic, group, nil)
	if err != nil {
		return err
	}
	first, err := e.drain(ctx, c1, topic)
	if err != nil {
		return err
	}
	c1.Close()
	end1, err := e.Kafka.EndOffset(ctx, topic)
	if err != nil {
		return err
	}
	committed, err := e.Kafka.Committed(ctx, group, topic)
	if err != nil {
		return err
	}
	if _, err := e.placeCommitted(ctx, cl, "restart-3"); err != nil {
		return err
	}
	if _, err := r.RunOnce(ctx); err != nil {
		return err
	}
	return e.measureRestart(ctx, topic, group, first, committed, end1)
}

// measureRestart runs consumer-2 until it has received every record past
// the group's committed offset and records the metrics: duplicates
// rejected by the inbox, the offset the group had committed when
// consumer-1 stopped, where consumer-2 resumed (the end offset minus what
// it received: it reads a contiguous tail), its replays of records
// consumer-1 had handled, the effects and the lag at the end (offsets as
// the broker has them).
func (e *Env) measureRestart(ctx context.Context, topic, group string, first sut.ConsumerStats, committed, end1 int64) error {
	rs, err := e.resume(ctx, topic, group, committed)
	if err != nil {
		return err
	}
	e.Result.Metric("duplicates", first.InboxRejected+rs.stats.InboxRejected)
	e.Result.Metric("committed", committed)
	e.Result.Metric("resumedAt", rs.resumedAt)
	e.Result.Metric("replays", max(end1-rs.resumedAt, 0))
	e.Result.Metric("effects", rs.effects)
	e.Result.Metric("lag", rs.lag)
	return nil
}

// resumed is what consumer-2 of a group did once it took over.
type resumed struct {
	stats     sut.ConsumerStats
	resumedAt int64 // the end offset minus what it received (a contiguous tail)
	effects   int64 // notifications at the end
	lag       int64 // the end offset minus the group's committed offset, as the broker has them
}

// resume runs consumer-2 of group until it has received every record past
// committed (the group's offset when the previous member stopped), stops
// it, and reads where it resumed, the effects and the lag.
func (e *Env) resume(ctx context.Context, topic, group string, committed int64) (resumed, error) {
	var rs resumed
	c2, err := e.Consumer(ctx, "consumer-2", topic, group, nil)
	if err != nil {
		return rs, err
	}
	end, err := e.Kafka.EndOffset(ctx, topic)
	if err != nil {
		return rs, err
	}
	if rs.stats, err = e.poll(ctx, c2, func(s sut.ConsumerStats) bool { return int64(s.Received) >= end-committed }); err != nil {
		return rs, err
	}
	c2.Close()
	after, err := e.Kafka.Committed(ctx, group, topic)
	if err != nil {
		return rs, err
	}
	if rs.effects, err = e.Count(ctx, "notification", ""); err != nil {
		return rs, err
	}
	rs.resumedAt, rs.lag = end-int64(rs.stats.Received), end-after
	return rs, nil
}
