package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
)

// The send boundary (spec/send.go); relayKill9 is in kill.go.
func init() {
	bind("sendBeforeMarkCrash", sendBeforeMarkCrash)
	bind("concurrentRelays", concurrentRelays)
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

// concurrentRelays is one function of four phases (both relays claim at
// once and hold, both publish and mark what they hold, a sweep, the
// measurement) because each phase checks what the previous ones claimed:
// split, the halves would pass the held claims back and forth.
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

	sent, effects, err := e.consumeAll(ctx, topic)
	if err != nil {
		return err
	}
	e.Result.Metric("claims", claims)
	e.Result.Metric("doubleClaims", double)
	e.Result.Metric("sent", sent)
	e.Result.Metric("effects", effects)
	return nil
}
