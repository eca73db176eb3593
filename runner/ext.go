package runner

import (
	"context"
	"errors"
	"sync"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
)

// The EXT scenarios expose bugs that the U80 five cannot: a race between
// relays, and a crash between an order and an intent written apart from it.
func init() {
	bind("concurrentRelays", concurrentRelays)
	bind("orderCrashWindow", orderCrashWindow)
}

func concurrentRelays(ctx context.Context, e *Env) error {
	const n = 8
	topic, _, err := e.startChain(ctx, "race", n)
	if err != nil {
		return err
	}
	relays := make([]sut.Relay, 2)
	for i, name := range []string{"relay-a", "relay-b"} {
		if relays[i], err = e.Relay(name, topic, nil); err != nil {
			return err
		}
	}
	// Both relays claim at the same moment, each half of the rows, and both
	// hold their claims before anyone publishes or marks: a correct claim
	// gives each relay its own four rows (SKIP LOCKED skips the rows the
	// other is locking; a committed claim holds a live lease), a claim
	// without the lock or the lease check hands the same rows out twice.
	held := make([][]sut.Claimed, len(relays))
	errs := make([]error, len(relays))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, r := range relays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			held[i], errs[i] = r.Claim(ctx, n/len(relays))
		}()
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// A row claimed by both relays is a double claim: every lease here is
	// live (30 s) for the whole scenario.
	holders := map[string]int{}
	claims := 0
	for _, cs := range held {
		claims += len(cs)
		for _, c := range cs {
			holders[c.EventID]++
		}
	}
	double := 0
	for _, k := range holders {
		if k > 1 {
			double++
		}
	}
	for i, r := range relays {
		for _, c := range held[i] {
			if _, _, err := r.Publish(ctx, c); err != nil {
				return err
			}
			if _, err := r.Mark(ctx, c); err != nil {
				return err
			}
		}
	}
	// Whatever no relay claimed is swept by relay A.
	sweep, err := relays[0].RunOnce(ctx)
	if err != nil {
		return err
	}
	claims += len(sweep.Claimed)

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
	e.Result.Metric("claims", claims)
	e.Result.Metric("doubleClaims", double)
	e.Result.Metric("sent", sent)
	e.Result.Metric("effects", effects)
	return nil
}

func orderCrashWindow(ctx context.Context, e *Env) error {
	if err := e.SeedStock(ctx, defaultSKU, 10); err != nil {
		return err
	}
	e.Faults.Arm(fault.AfterOrderCommitBeforeOutbox, fault.Crash, 1)
	cl, err := e.Orders()
	if err != nil {
		return err
	}
	if _, err := e.placeOne(ctx, cl, "window-1", 1); err != nil {
		return err
	}
	// The order service does not record its own simulated death; the
	// scenario, which armed the point, records that it fired.
	if e.Faults.Hits(fault.AfterOrderCommitBeforeOutbox) > 0 {
		if err := e.Emit(evidence.Event{
			Kind: evidence.KindFault, Point: string(fault.AfterOrderCommitBeforeOutbox),
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
