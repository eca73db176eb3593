package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/genload"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
)

// The generated, model-checked load inside chaos (issue 23, item 1):
// genload's rounds (--gen-rounds, seeded with the run's seed) sent to the
// order service beside nemesis.Load's orders, while the nemesis strikes.
// The rounds are spread over --duration. Each user has one request in
// flight, as in generatedLoad, and a request
// is sent once: one without an answer is recorded with its transport
// error (its outcome unknown, which the verifier's reference model keeps
// as such), and a 5xx as answered. The engine settles only once the load
// has ended (Quiescent).

// genGrace is how long past --duration the generated load may still
// start a round: a round not started by then is not sent (the order
// service was slow under the faults), so that the chain can settle within
// the engine's bound after the heal. The evidence holds the requests that
// were sent (order_request with the raw request).
const genGrace = 2 * time.Second

// genProgress says how far the generated load is, for Quiescent: the
// engine waits while it changes.
func (cr *chaosRun) genProgress() string {
	return fmt.Sprintf("the generated load is still sending (round %d of %d)", cr.genRound.Load(), cr.cfg.GenRounds)
}

// startGenerated starts the generated load, once: at the first request of
// the chaos load (the order service has started by then).
func (cr *chaosRun) startGenerated(ctx context.Context) {
	cr.gen.Do(func() { go cr.sendGenerated(ctx) })
}

// sendGenerated sends the rounds, every user's request of a round at
// once, and closes genDone at its end. A failure to record is the
// scenario's.
func (cr *chaosRun) sendGenerated(ctx context.Context) {
	defer close(cr.genDone)
	rounds := genload.Generate(genload.Config{Seed: uint64(cr.cfg.Seed), Rounds: cr.cfg.GenRounds})
	cr.mu.Lock()
	cl := &orders.Client{BaseURL: cr.url, HTTP: cr.http}
	cr.mu.Unlock()
	t0 := time.Now()
	end := t0.Add(cr.cfg.Duration + genGrace)
	for n, round := range rounds {
		if time.Now().After(end) {
			return
		}
		cr.genRound.Store(int64(n + 1))
		// Round n starts no earlier than n/len(rounds) into --duration, as
		// the chaos load's requests are handed out: the load lasts as long
		// as the faults, and its rounds meet them and their heals.
		if !sleepCtx(ctx, time.Until(t0.Add(cr.cfg.Duration*time.Duration(n)/time.Duration(len(rounds))))) {
			return
		}
		errs := make([]error, len(round))
		var wg sync.WaitGroup
		for i, req := range round {
			wg.Go(func() { _, errs[i] = cr.e.postGenerated(ctx, cl, req, true) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil && ctx.Err() == nil {
				cr.e.Result.Failf("the generated load: %v", err)
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// sleepCtx waits d (nothing when d <= 0) and says whether ctx is still
// live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	return ctx.Err() == nil
}
