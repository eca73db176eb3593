package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// rebalanceRuns are the scenarios this file runs, by id (runs). A
// rebalance aimed at a member settling a polled batch, and the time its
// partitions spend without an owner (spec/consumer.go, spec/liveness.go).
var rebalanceRuns = map[string]runFunc{
	"rebalanceSettling": rebalanceSettling,
}

// rebalanceWait bounds each wait of rebalanceSettling: above the session
// timeout, so that a member that closes without leaving is measured, not
// given up on.
const rebalanceWait = spec.UnownedAfterDeath + 5*time.Second

// rebalanceSettling runs the scenario rebalanceSettling of spec/consumer.go,
// which says what it does and what its metrics mean.
func rebalanceSettling(ctx context.Context, e *Env) error {
	topic, err := e.topicN(ctx, "", 2)
	if err != nil {
		return err
	}
	if _, _, err := e.placeOrders(ctx, "rebal", 4); err != nil {
		return err
	}
	if err := e.relayRound(ctx, topic); err != nil {
		return err
	}
	group := "notify-" + e.RunID
	var pumps pumps
	defer pumps.stop()
	faults := &fault.Injector{}
	// Consumer-1 is held after its first effect, before that offset
	// commit, until consumer-2's join has put the group into a rebalance.
	faults.ArmFunc(spec.AfterEffectBeforeOffsetCommit, 1, func() error {
		c2, err := e.Consumer(ctx, "consumer-2", topic, group, nil)
		if err != nil {
			return err
		}
		pumps.start(ctx, c2)
		state, err := e.awaitJoin(ctx, group)
		if err != nil {
			return err
		}
		return e.Emit(evidence.Event{Kind: evidence.KindFault, Point: string(spec.AfterEffectBeforeOffsetCommit),
			Detail: fmt.Sprintf("consumer-1 held between an effect and its offset commit until consumer-2 joined group %s (%s)", group, state)})
	})
	c1, err := e.Consumer(ctx, "consumer-1", topic, group, faults)
	if err != nil {
		return err
	}
	p1 := pumps.start(ctx, c1)
	if err := e.awaitSettled(ctx, topic, group, 4, &pumps); err != nil {
		return err
	}
	if faults.Hits(spec.AfterEffectBeforeOffsetCommit) != 1 {
		return errors.New("consumer-1 settled the orders without passing its offset commit's fault point")
	}
	// The rebalance consumer-2's join started ends with a partition
	// handed to it.
	if err := e.awaitOwned(ctx, "consumer-2", 1); err != nil {
		return err
	}
	p1.stop()
	c1.Close() // a clean close: consumer-2 must own everything within spec.UnownedAfterLeave
	if err := e.awaitOwned(ctx, "consumer-2", 2); err != nil {
		return err
	}
	if err := e.awaitSettled(ctx, topic, group, 4, &pumps); err != nil {
		return err
	}
	stats := pumps.stop()
	return e.measureRebalance(ctx, topic, group, stats)
}

// measureRebalance records the metrics: the members' ownership events
// from their own logs, the notifications, the lag on the broker.
func (e *Env) measureRebalance(ctx context.Context, topic, group string, stats []sut.ConsumerStats) error {
	gaps, late, err := e.ownershipGaps("consumer-1", "consumer-2")
	if err != nil {
		return err
	}
	var longest time.Duration
	var over int
	for _, g := range gaps {
		longest = max(longest, g.d)
		if g.d > g.bound {
			over++
		}
	}
	effects, err := e.Count(ctx, "notification", "")
	if err != nil {
		return err
	}
	lag, err := e.lag(ctx, topic, group)
	if err != nil {
		return err
	}
	var dups int
	for _, s := range stats {
		dups += s.InboxRejected
	}
	e.Result.Metric("handoffs", len(gaps))
	e.Result.Metric("unownedMaxMs", longest.Milliseconds())
	e.Result.Metric("overBound", over)
	e.Result.Metric("commitsAfterRevoke", late)
	e.Result.Metric("duplicates", dups)
	e.Result.Metric("effects", effects)
	e.Result.Metric("lag", lag)
	return nil
}

// lag is the topic's end offset minus group's committed offsets, as the
// broker has them.
func (e *Env) lag(ctx context.Context, topic, group string) (int64, error) {
	end, err := e.Kafka.EndOffset(ctx, topic)
	if err != nil {
		return 0, err
	}
	committed, err := e.Kafka.Committed(ctx, group, topic)
	if err != nil {
		return 0, err
	}
	return end - committed, nil
}

// awaitJoin waits until the coordinator counts two members of group or
// has it in a rebalance, and returns its state then.
func (e *Env) awaitJoin(ctx context.Context, group string) (string, error) {
	return await(ctx, rebalanceWait, "consumer-2's join of group "+group, func() (string, bool, error) {
		n, state, err := e.Kafka.GroupMembers(ctx, group)
		return fmt.Sprintf("%s, %d member(s)", state, n), err == nil && (n >= 2 || state == "PreparingRebalance"), err
	})
}

// awaitSettled waits until n notifications are written and group has
// committed the topic's end, or a member of ps stopped on an error.
func (e *Env) awaitSettled(ctx context.Context, topic, group string, n int64, ps *pumps) error {
	_, err := await(ctx, rebalanceWait, fmt.Sprintf("%d effects and no lag", n), func() (string, bool, error) {
		if err := ps.failed(); err != nil {
			return "", false, err
		}
		effects, err := e.Count(ctx, "notification", "")
		if err != nil {
			return "", false, err
		}
		lag, err := e.lag(ctx, topic, group)
		return fmt.Sprintf("%d effects, lag %d", effects, lag), err == nil && effects >= n && lag == 0, err
	})
	return err
}

// awaitOwned waits until member's own log shows it holding n partitions.
func (e *Env) awaitOwned(ctx context.Context, member string, n int) error {
	_, err := await(ctx, rebalanceWait, fmt.Sprintf("%s owning %d partitions", member, n), func() (string, bool, error) {
		es, err := evidence.ReadEvents(filepath.Join(e.logDir, member+".jsonl"))
		if err != nil {
			return err.Error(), false, nil // a line being written: read again
		}
		held := map[int32]bool{}
		for _, ev := range es {
			switch ev.Kind {
			case evidence.KindPartitionAssigned:
				held[*ev.Partition] = true
			case evidence.KindPartitionRevoked, evidence.KindPartitionLost:
				delete(held, *ev.Partition)
			}
		}
		return fmt.Sprintf("%d owned", len(held)), len(held) >= n, nil
	})
	return err
}

// await polls cond every 20 ms until it holds, fails or within passes.
func await(ctx context.Context, within time.Duration, what string, cond func() (string, bool, error)) (string, error) {
	deadline := time.Now().Add(within)
	for {
		state, ok, err := cond()
		if err != nil || ok {
			return state, err
		}
		if time.Now().After(deadline) {
			return state, fmt.Errorf("waiting for %s: not reached within %v (%s)", what, within, state)
		}
		select {
		case <-ctx.Done():
			return state, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// gap is a partition's time without an owner, from the members' logs.
type gap struct {
	d, bound time.Duration
}

// ownershipGaps reads the members' logs and returns each interval a
// partition spent between one member's release (revoked: held to
// spec.UnownedAfterLeave; lost: spec.UnownedAfterDeath), or the next
// member's group_join when that came later, and the next assignment of it, and the offset commits a member made on a partition
// it had released and not been assigned again.
func (e *Env) ownershipGaps(members ...string) ([]gap, int, error) {
	var all []evidence.Event
	for _, m := range members {
		es, err := evidence.ReadEvents(filepath.Join(e.logDir, m+".jsonl"))
		if err != nil {
			return nil, 0, err
		}
		all = append(all, es...)
	}
	slices.SortStableFunc(all, func(a, b evidence.Event) int { return a.Time.Compare(b.Time) })
	type key struct {
		actor string
		part  int32
	}
	holds := map[key]bool{}
	released := map[key]bool{}
	owners := map[int32]int{}
	open := map[int32]gap{}
	since := map[int32]time.Time{}
	joined := map[string]time.Time{}
	var gaps []gap
	late := 0
	for _, ev := range all {
		if _, ok := joined[ev.Actor]; !ok && ev.Kind == evidence.KindGroupJoin {
			joined[ev.Actor] = ev.Time
		}
		if ev.Partition == nil {
			continue
		}
		p, k := *ev.Partition, key{ev.Actor, *ev.Partition}
		switch ev.Kind {
		case evidence.KindPartitionAssigned:
			if g, ok := open[p]; ok {
				from := since[p]
				if j, ok := joined[ev.Actor]; ok && j.After(from) {
					from = j // the successor was not in the group before
				}
				g.d = ev.Time.Sub(from)
				gaps = append(gaps, g)
				delete(open, p)
			}
			if !holds[k] {
				holds[k] = true
				owners[p]++
			}
			delete(released, k)
		case evidence.KindPartitionRevoked, evidence.KindPartitionLost:
			if !holds[k] {
				continue
			}
			delete(holds, k)
			released[k] = true
			if owners[p]--; owners[p] == 0 {
				bound := spec.UnownedAfterLeave
				if ev.Kind == evidence.KindPartitionLost {
					bound = spec.UnownedAfterDeath
				}
				open[p], since[p] = gap{bound: bound}, ev.Time
			}
		case evidence.KindOffsetCommit:
			if released[k] {
				late++
			}
		}
	}
	return gaps, late, nil
}

// pumps are consumers polling in the background until stopped.
type pumps struct {
	mu  sync.Mutex
	all []*pump
}

// pump is one consumer polling in the background.
type pump struct {
	cancel context.CancelFunc
	done   chan struct{}
	stats  sut.ConsumerStats
	err    error
}

// start makes c poll until its pump is stopped.
func (ps *pumps) start(ctx context.Context, c sut.Consumer) *pump {
	pctx, cancel := context.WithCancel(ctx)
	p := &pump{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.stats, p.err = c.PollUntil(pctx, func(sut.ConsumerStats) bool { return false })
	}()
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	return p
}

// failed returns the error of a pump that stopped on its own.
func (ps *pumps) failed() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.all {
		select {
		case <-p.done:
			if p.err != nil && !errors.Is(p.err, context.Canceled) {
				return p.err
			}
		default:
		}
	}
	return nil
}

// stop cancels p's polling and waits for it to return.
func (p *pump) stop() {
	p.cancel()
	<-p.done
}

// stop stops every pump and returns their stats, in start order.
func (ps *pumps) stop() []sut.ConsumerStats {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]sut.ConsumerStats, len(ps.all))
	for i, p := range ps.all {
		p.stop()
		out[i] = p.stats
	}
	return out
}
