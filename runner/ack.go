package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// ackRuns are the scenarios this file runs, by id (runs). The ack boundary
// (spec/ack.go).
var ackRuns = map[string]runFunc{
	"offsetReplay": offsetReplay,
}

// offsetReplay runs the scenario offsetReplay of spec/ack.go, which says
// what it does and what its metrics mean.
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
	faults1.Arm(spec.AfterEffectBeforeOffsetCommit, fault.Crash, 1)
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
