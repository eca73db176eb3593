package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// sendRuns are the scenarios this file runs, by id (runs). The send boundary
// (spec/send.go).
var sendRuns = map[string]runFunc{
	"sendBeforeMarkCrash": sendBeforeMarkCrash,
	"concurrentRelays":    concurrentRelays,
}

// sendBeforeMarkCrash runs the scenario sendBeforeMarkCrash of spec/send.go,
// which says what it does and what its metrics mean.
func sendBeforeMarkCrash(ctx context.Context, e *Env) error {
	topic, placed, err := e.startChain(ctx, "crash", 1)
	if err != nil {
		return err
	}
	order := placed[0]

	// Relay A claims v1, publishes, and dies before its mark.
	faultsA := &fault.Injector{}
	faultsA.Arm(spec.AfterPublishBeforeMark, fault.Crash, 1)
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

// concurrentRelays runs the scenario concurrentRelays of spec/send.go, which
// says what it does and what its metrics mean.
// It is one function of five phases (both relays claim at once and hold,
// one claims again while everything is held, both publish and mark what
// they hold, a sweep, the measurement) because each phase checks what the
// previous ones claimed: split, the parts would pass the held claims back
// and forth.
func concurrentRelays(ctx context.Context, e *Env) error {
	const n = 8
	topic, _, err := e.startChain(ctx, "race", n)
	if err != nil {
		return err
	}
	// Relay B claims inside relay A's claim transaction, after A's select
	// returned (and locked) its rows and before A claims them: the two
	// claims overlap by construction. A correct claim gives each relay its
	// own four rows (SKIP LOCKED skips the rows A is locking), and both
	// hold them (live leases of 30 s) until phase 3; a claim that does not
	// lock what it selects hands A's rows to B, and A then claims them
	// again over B's live lease.
	inA := &fault.Injector{}
	relays := make([]sut.Relay, 2)
	for i, name := range []string{"relay-a", "relay-b"} {
		var inj *fault.Injector
		if i == 0 {
			inj = inA
		}
		if relays[i], err = e.Relay(name, topic, inj); err != nil {
			return err
		}
	}
	held := make([][]sut.Claimed, len(relays))
	var errB error
	inA.ArmFunc(spec.ClaimLocked, 1, func() error {
		held[1], errB = relays[1].Claim(ctx, n/len(relays))
		return errB
	})
	if held[0], err = relays[0].Claim(ctx, n/len(relays)); err != nil {
		return err
	}
	inA.Disarm(spec.ClaimLocked)
	// Overlap: B's claim ran while A's was open, and both got rows.
	overlap := inA.Hits(spec.ClaimLocked) == 1 && len(held[0]) > 0 && len(held[1]) > 0
	// While every row is held, relay B tries to claim them all: a claim
	// that honours live leases gets none, whatever the timing of phase 1.
	again, err := relays[1].Claim(ctx, n)
	if err != nil {
		return err
	}
	held[1] = append(held[1], again...)
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
	sent, effects, err := e.consumeAll(ctx, topic)
	if err != nil {
		return err
	}
	e.Result.Metric("claims", len(held[0])+len(held[1])+len(sweep.Claimed))
	e.Result.Metric("doubleClaims", doubleClaims(held))
	e.Result.Metric("overlap", overlap)
	e.Result.Metric("sent", sent)
	e.Result.Metric("effects", effects)
	return nil
}

// doubleClaims counts the claims of a row whose previous claim was by
// another relay: every lease here is live (30 s) and no row is SENT until
// the relays publish and mark, so each is a claim on a live lease another
// relay held (the verifier's doubleClaims). A row's claims are ordered by
// their claim_version.
func doubleClaims(held [][]sut.Claimed) int {
	byRow := map[string]map[int64]string{} // event id -> claim_version -> claim id
	for _, cs := range held {
		for _, c := range cs {
			if byRow[c.EventID] == nil {
				byRow[c.EventID] = map[int64]string{}
			}
			byRow[c.EventID][c.ClaimVersion] = c.ClaimID
		}
	}
	double := 0
	for _, versions := range byRow {
		for v, id := range versions {
			if prev, ok := versions[v-1]; ok && prev != id {
				double++
			}
		}
	}
	return double
}
