package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// leaseRuns are the scenarios this file runs, by id (runs). Leases
// (spec/lease.go).
var leaseRuns = map[string]runFunc{
	"selfTakeover":      selfTakeover,
	"batchSelfTakeover": batchSelfTakeover,
	"relayClockSkew":    relayClockSkew,
}

// batchSelfTakeover runs the scenario batchSelfTakeover of spec/lease.go,
// which says what it does and what its metrics mean.
func batchSelfTakeover(ctx context.Context, e *Env) error {
	topic, placed, err := e.startChain(ctx, "batchself", 2)
	if err != nil {
		return err
	}
	first := placed[0].EventID
	inj := &fault.Injector{}
	a, err := e.Relay("relay-a", topic, inj)
	if err != nil {
		return err
	}
	var takeover sut.Claimed
	inj.ArmFunc(spec.AfterPublishBeforeMark, 1, func() error {
		row, err := e.readOutbox(ctx, first)
		if err != nil {
			return err
		}
		held := sut.Claimed{ID: row.ID, EventID: first, OrderID: row.AggregateID, ClaimVersion: row.ClaimVersion, ClaimID: row.ClaimID.String}
		if _, err := e.ExpireLease(ctx, held); err != nil {
			return err
		}
		takeover, err = claimOne(ctx, a, first)
		return err
	})
	res, err := a.RunOnce(ctx)
	if err != nil {
		return err
	}
	if inj.Hits(spec.AfterPublishBeforeMark) != 1 || takeover.EventID == "" {
		return fmt.Errorf("relay A's round claimed %d intents and never reached its batch mark with them published", len(res.Claimed))
	}
	if _, _, err := a.Publish(ctx, takeover); err != nil {
		return err
	}
	rows, err := a.Mark(ctx, takeover)
	if err != nil {
		return err
	}
	sent, effects, err := e.consumeAll(ctx, topic)
	if err != nil {
		return err
	}
	self := 0
	if takeover.ClaimID == a.ClaimID() && takeover.ClaimVersion == 2 {
		self = 1
	}
	e.Result.Metric("claims", len(res.Claimed)+1)
	e.Result.Metric("selfTakeovers", self)
	e.Result.Metric("staleMarks", res.LeaseLost)
	e.Result.Metric("marks", int64(res.Marked)+rows)
	e.Result.Metric("sent", sent)
	e.Result.Metric("effects", effects)
	return nil
}

// selfTakeover runs the scenario selfTakeover of spec/lease.go, which says
// what it does and what its metrics mean.
func selfTakeover(ctx context.Context, e *Env) error {
	topic, placed, err := e.startChain(ctx, "self", 1)
	if err != nil {
		return err
	}
	order := placed[0]
	a, err := e.Relay("relay-a", topic, nil)
	if err != nil {
		return err
	}
	b, err := e.Relay("relay-b", topic, nil)
	if err != nil {
		return err
	}
	v1, err := claimOne(ctx, a, order.EventID)
	if err != nil {
		return err
	}
	if _, _, err := a.Publish(ctx, v1); err != nil {
		return err
	}
	if _, err := e.ExpireLease(ctx, v1); err != nil {
		return err
	}
	v2, err := claimOne(ctx, a, order.EventID)
	if err != nil {
		return err
	}
	// B's claim runs into A's fresh lease: it must get nothing.
	stolen, err := b.Claim(ctx, 1)
	if err != nil {
		return err
	}
	if _, _, err := a.Publish(ctx, v2); err != nil {
		return err
	}
	staleRows, err := a.Mark(ctx, v1)
	if err != nil {
		return err
	}
	if rows, err := a.Mark(ctx, v2); err != nil {
		return err
	} else if rows != 1 {
		e.Result.Failf("relay A's mark with v%d hit %d rows, want 1", v2.ClaimVersion, rows)
	}
	m, err := e.measureTakeover(ctx, topic, order.EventID)
	if err != nil {
		return err
	}
	e.Result.Metric("sameClaimId", v2.ClaimID == v1.ClaimID)
	e.Result.Metric("takeoverVersion", v2.ClaimVersion)
	e.Result.Metric("stolen", len(stolen))
	e.Result.Metric("staleMark", staleRows)
	e.Result.Metric("deliveries", m.deliveries)
	e.Result.Metric("effects", m.effects)
	e.Result.Metric("state", m.state)
	return nil
}

// claimOne claims one intent with r and fails unless it is eventID.
func claimOne(ctx context.Context, r sut.Relay, eventID string) (sut.Claimed, error) {
	cs, err := r.Claim(ctx, 1)
	if err != nil {
		return sut.Claimed{}, err
	}
	if len(cs) != 1 || cs[0].EventID != eventID {
		return sut.Claimed{}, fmt.Errorf("relay %s claimed %d intents, want %s", r.ClaimID(), len(cs), eventID)
	}
	return cs[0], nil
}

// clockSkew is how far the two relays' own clocks are off, each way;
// skewLease is their lease.
const (
	clockSkew = time.Hour
	skewLease = 30 * time.Second
)

// relayClockSkew runs the scenario relayClockSkew of spec/lease.go, which
// says what it does and what its metrics mean.
func relayClockSkew(ctx context.Context, e *Env) error {
	topic, _, err := e.startChain(ctx, "skew", 2)
	if err != nil {
		return err
	}
	var relays []sut.Relay
	for _, r := range []struct {
		name string
		skew time.Duration
	}{{"relay-ahead", clockSkew}, {"relay-behind", -clockSkew}} {
		rel, err := e.RelayWith(r.name, topic, nil, func(c *sut.RelayConfig) {
			c.Lease = skewLease
			c.Now = func() time.Time { return time.Now().Add(r.skew) }
		})
		if err != nil {
			return err
		}
		relays = append(relays, rel)
	}
	// Each relay claims one row, then (both rows held) tries for both.
	held := make([][]sut.Claimed, len(relays))
	claims, off, steals := 0, 0, 0
	for round, max := range []int{1, 2} {
		for i, r := range relays {
			cs, offClock, err := e.claimOnDBClock(ctx, r, max)
			if err != nil {
				return err
			}
			held[i] = append(held[i], cs...)
			claims, off = claims+len(cs), off+offClock
			if round > 0 {
				steals += len(cs)
			}
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
	sent, effects, err := e.consumeAll(ctx, topic)
	if err != nil {
		return err
	}
	e.Result.Metric("claims", claims)
	e.Result.Metric("leasesOffClock", off)
	e.Result.Metric("steals", steals)
	e.Result.Metric("sent", sent)
	e.Result.Metric("effects", effects)
	return nil
}

// claimOnDBClock has r claim up to max intents and counts the claims whose
// lease does not start on the database clock within the claim: lease_until
// minus skewLease outside [NOW(6) before the claim, NOW(6) after it].
func (e *Env) claimOnDBClock(ctx context.Context, r sut.Relay, max int) (cs []sut.Claimed, off int, err error) {
	before, err := e.dbNow(ctx)
	if err != nil {
		return nil, 0, err
	}
	if cs, err = r.Claim(ctx, max); err != nil {
		return nil, 0, err
	}
	after, err := e.dbNow(ctx)
	if err != nil {
		return nil, 0, err
	}
	for _, c := range cs {
		start := c.LeaseUntil.Add(-skewLease)
		if start.Before(before) || start.After(after) {
			off++
		}
	}
	return cs, off, nil
}

func (e *Env) dbNow(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := e.DB.QueryRowContext(ctx, `SELECT NOW(6)`).Scan(&now); err != nil {
		return now, fmt.Errorf("read the database clock: %w", err)
	}
	return now.UTC(), nil
}
