package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"

	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Relay bounds: a round publishes its batch under one publish timeout
// (spec.PublishRoundSlack).
const (
	// batchTimeoutPublish is the relay's publish timeout in
	// publishBatchTimeout, and batchTimeoutSize its batch: a timeout that
	// grew with the batch would end the round five timeouts (1.5 s) past
	// the bound's timeout, far beyond spec.PublishRoundSlack.
	batchTimeoutPublish = 300 * time.Millisecond
	batchTimeoutSize    = 6
)

// publishBatchTimeout runs the scenario publishBatchTimeout of
// spec/publish.go, which says what it does and what its metrics mean.
func publishBatchTimeout(ctx context.Context, e *Env) error {
	topic, placed, err := e.startChain(ctx, "pubbatch", batchTimeoutSize)
	if err != nil {
		return err
	}
	pf, err := e.Kafka.ProduceFaults()
	if err != nil {
		return err
	}
	e.Defer(pf.Clear)
	for _, p := range placed {
		pf.Swallow(p.EventID)
	}
	r, err := e.RelayWith("relay-a", topic, nil, func(c *sut.RelayConfig) {
		c.PublishTimeout, c.Batch = batchTimeoutPublish, batchTimeoutSize
	})
	if err != nil {
		return err
	}
	start := time.Now()
	first, err := r.RunOnce(ctx)
	took := time.Since(start)
	if err != nil {
		return err
	}
	if err := e.recordSwallowed(pf, placed); err != nil {
		return err
	}
	pastTimeout := 0
	if took > batchTimeoutPublish+spec.PublishRoundSlack {
		pastTimeout = len(first.Claimed)
		e.Result.Failf("the relay's round of %d intents took %v: its publish timeout is %v, the bound %v",
			len(first.Claimed), took, batchTimeoutPublish, batchTimeoutPublish+spec.PublishRoundSlack)
	}
	for _, c := range first.Claimed {
		if _, err := e.ExpireLease(ctx, c); err != nil {
			return err
		}
	}
	retry, err := runRounds(ctx, r)
	if err != nil {
		return err
	}
	sent, effects, err := e.consumeAll(ctx, topic)
	if err != nil {
		return err
	}
	e.Result.Metric("claims", len(first.Claimed)+len(retry.Claimed))
	e.Result.Metric("unknown", first.PublishUnknown+retry.PublishUnknown)
	e.Result.Metric("pastTimeout", pastTimeout)
	e.Result.Metric("effects", effects)
	e.Result.Metric("sent", sent)
	return nil
}

// recordSwallowed records, after the round, one fault event per intent
// whose record a produce request the broker swallowed carried first (the
// broker counts a request once, under the first record it matches: the
// batch's records share requests), then clears the faults. A round that
// sent no request the broker swallowed fails the scenario.
func (e *Env) recordSwallowed(pf *infra.ProduceFaults, placed []*orders.PlaceResponse) error {
	hits := make([]int, len(placed))
	total := 0
	for i, p := range placed {
		hits[i] = pf.Hits(p.EventID)
		total += hits[i]
	}
	pf.Clear()
	if total == 0 {
		e.Result.Failf("the broker was told to swallow the publishes of %d intents, and no produce request carried one", len(placed))
		return nil
	}
	var ids []string
	for _, p := range placed {
		ids = append(ids, p.EventID)
	}
	for i, p := range placed {
		if hits[i] == 0 {
			continue
		}
		if err := e.Emit(evidence.Event{Kind: evidence.KindFault, Point: string(spec.PublishTimeout), EventID: p.EventID,
			Detail: fmt.Sprintf("the broker left %d produce request(s) unanswered and appended nothing (first matched by %s; "+
				"the requests carried the batch %s)", hits[i], p.EventID, strings.Join(ids, ", "))}); err != nil {
			return err
		}
	}
	return nil
}

// Relay bounds: a polling relay claims a committed intent within
// spec.RelayPoll plus spec.ClaimWaitSlack.
const (
	pollOrders  = 4
	pollIdle    = 50 * time.Millisecond   // after an intent is SENT, before the next order
	pollSentMax = 10 * time.Second        // the longest the scenario waits for an intent to be SENT
	pollCheck   = 5 * time.Millisecond    // how often it looks
	pollTimeout = 1000 * time.Millisecond // the relay's publish timeout
)

// relayPoll runs the scenario relayPoll of spec/publish.go, which says
// what it does and what its metrics mean.
func relayPoll(ctx context.Context, e *Env) error {
	topic, err := e.Topic(ctx, "")
	if err != nil {
		return err
	}
	if err := e.SeedStock(ctx, defaultSKU, 10); err != nil {
		return err
	}
	cl, err := e.Orders()
	if err != nil {
		return err
	}
	r, err := e.RelayWith("relay-a", topic, nil, func(c *sut.RelayConfig) { c.PublishTimeout, c.Batch = pollTimeout, 1 })
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx, 0) }()
	placeErr := e.placeWhilePolling(ctx, cl)
	stop()
	if err := <-done; err != nil {
		return fmt.Errorf("relay-a: %w", err)
	}
	if placeErr != nil {
		return placeErr
	}
	sent, effects, err := e.consumeAll(ctx, topic)
	if err != nil {
		return err
	}
	claims, err := e.Count(ctx, "outbox", "claim_version > 0")
	if err != nil {
		return err
	}
	e.Result.Metric("claims", claims)
	e.Result.Metric("sent", sent)
	e.Result.Metric("effects", effects)
	return nil
}

// placeWhilePolling places pollOrders orders one at a time, each once the
// one before is SENT and pollIdle has passed.
func (e *Env) placeWhilePolling(ctx context.Context, cl *orders.Client) error {
	for i := 1; i <= pollOrders; i++ {
		o, err := e.placeCommitted(ctx, cl, fmt.Sprintf("poll-%d", i))
		if err != nil {
			return err
		}
		deadline := time.Now().Add(pollSentMax)
		for {
			n, err := e.Count(ctx, "outbox", "event_id = ? AND state = 'SENT'", o.EventID)
			if err != nil {
				return err
			}
			if n == 1 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("relayPoll: %s not SENT %v after its order was placed: the polling relay did not move it", o.EventID, pollSentMax)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pollCheck):
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollIdle):
		}
	}
	return nil
}
