package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
)

// stallTimeout ends a phase that made no progress for this long.
const stallTimeout = 60 * time.Second

// Run runs a bench (see the package documentation) and returns what it
// measured. An error wrapping ErrCheckFailed comes with the Result: the
// run completed and its own check found events without exactly one
// effect. Other errors: bad options (ErrBadOptions), the infrastructure
// (infra.ErrUnavailable), or an actor's failure.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	runID := runner.NewRunID(time.Now())
	p, err := open(ctx, opts, runID)
	if err != nil {
		return nil, err
	}
	defer p.close()
	res := &Result{RunID: runID, Events: opts.Events, Relays: opts.Relays, Consumers: opts.Consumers, Batch: opts.Batch,
		Partitions: opts.Partitions, History: opts.History, Clients: opts.Clients, RelayOnly: opts.RelayOnly, ConsumerBatch: !opts.ConsumerPerRecord,
		LingerMS: float64(opts.Linger) / float64(time.Millisecond),
		Database: p.server.Info.Flavour + " " + p.server.Info.Version, Broker: p.kafka.Implementation}
	if p.private != nil {
		res.Database += " (private server of the run)"
	} else {
		res.Database += " at " + p.server.Redacted()
	}
	if err := p.phases(ctx, res); err != nil {
		return nil, err
	}
	if err := p.closeLogs(); err != nil {
		return nil, fmt.Errorf("event logs: %w", err)
	}
	if !opts.RelayOnly {
		if err := p.latencies(res); err != nil {
			return nil, err
		}
	}
	if opts.beforeCheck != nil {
		if err := opts.beforeCheck(p); err != nil {
			return nil, err
		}
	}
	want := int64(2 * opts.Events)
	if opts.RelayOnly {
		want = int64(opts.Events)
	}
	if res.Check, err = p.check(ctx, want); err != nil {
		return nil, err
	}
	if opts.Keep || opts.LogDir != "" {
		res.LogDir = p.logDir
	}
	if !res.Check.OK {
		return res, fmt.Errorf("%w: %v", ErrCheckFailed, res.Check.Problems)
	}
	return res, nil
}

// phases seeds the run and runs its four phases.
func (p *pipeline) phases(ctx context.Context, res *Result) error {
	o := p.opts
	say := func(format string, args ...any) { fmt.Fprintf(o.Progress, "bench: "+format+"\n", args...) }
	t0 := time.Now()
	if err := p.seed(ctx, o.History); err != nil {
		return err
	}
	res.Phases.History = time.Since(t0).Seconds()
	if o.History > 0 {
		say("%d SENT rows of history in the outbox (%.1f s)", o.History, res.Phases.History)
	}
	if err := p.newRelays(); err != nil {
		return err
	}
	if o.RelayOnly {
		if err := p.seedRows(ctx, qSeedPending, "intents", o.Events); err != nil {
			return err
		}
		say("%d PENDING intents written by SQL (relay only)", o.Events)
	} else {
		if err := p.startOrders(); err != nil {
			return err
		}
		say("placement: %d orders, %d clients, nothing else running", o.Events, o.Clients)
		d, err := p.place(ctx, "place", o.Events)
		if err != nil {
			return err
		}
		res.Phases.Placement, res.PlacementEventsPerS = d.Seconds(), perSecond(o.Events, d)
		say("placement: %.0f orders/s (%.2f s)", res.PlacementEventsPerS, d.Seconds())
	}

	say("relay: %d relays, batch %d, draining %d intents, nothing else running", o.Relays, o.Batch, o.Events)
	t0 = time.Now()
	p.runRelays(ctx)
	if err := p.waitFor(ctx, "the relays", func() int64 { return p.marked.Load() }, int64(o.Events)); err != nil {
		return err
	}
	d := time.Since(t0)
	p.stopLoops()
	res.Phases.Relay, res.RelayEventsPerS = d.Seconds(), perSecond(o.Events, d)
	say("relay: %.0f events/s (%.2f s)", res.RelayEventsPerS, d.Seconds())
	if o.RelayOnly {
		return nil
	}

	if err := p.consumePhase(ctx, res); err != nil {
		return err
	}
	return p.endToEnd(ctx, res)
}

// consumePhase starts the consumers and waits for the relay phase's
// records to become effects; the rate counts from the first effect (the
// group's join comes before it).
func (p *pipeline) consumePhase(ctx context.Context, res *Result) error {
	o := p.opts
	fmt.Fprintf(o.Progress, "bench: consumers: %d members, %d partitions, applying %d records\n", o.Consumers, o.Partitions, o.Events)
	t0 := time.Now()
	if err := p.startConsumers(ctx); err != nil {
		return err
	}
	var first time.Time
	progress := func() int64 {
		n := p.effects()
		if n > 0 && first.IsZero() {
			first = time.Now()
		}
		return n
	}
	if err := p.waitFor(ctx, "the consumers", progress, int64(o.Events)); err != nil {
		return err
	}
	res.Phases.Consumers = time.Since(t0).Seconds()
	res.ConsumerEventsPerS = perSecond(o.Events, time.Since(first))
	fmt.Fprintf(o.Progress, "bench: consumers: %.0f events/s from the first effect (%.2f s with the join)\n",
		res.ConsumerEventsPerS, res.Phases.Consumers)
	return nil
}

// endToEnd places another Events orders with the relays and the
// consumers running, and waits for their effects.
func (p *pipeline) endToEnd(ctx context.Context, res *Result) error {
	o := p.opts
	fmt.Fprintf(o.Progress, "bench: end to end: %d orders with %d relays and %d consumers running\n", o.Events, o.Relays, o.Consumers)
	p.runRelays(ctx)
	t0 := time.Now()
	placed := make(chan error, 1)
	var placeTime atomic.Int64
	go func() {
		d, err := p.place(ctx, "e2e", o.Events)
		placeTime.Store(int64(d))
		placed <- err
	}()
	err := p.waitFor(ctx, "the pipeline", p.effects, int64(2*o.Events))
	d := time.Since(t0)
	if perr := <-placed; perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	// A record can become its effect before the relay that published it
	// has marked it: the relays go on until every intent is SENT (not
	// part of the end-to-end time, which ends at the last effect).
	if err := p.waitFor(ctx, "the relays' marks", func() int64 { return p.marked.Load() }, int64(2*o.Events)); err != nil {
		return err
	}
	p.stopLoops()
	res.Phases.EndToEnd, res.EndToEndEventsPerS = d.Seconds(), perSecond(o.Events, d)
	res.PlacementUnderLoadEventsPerS = perSecond(o.Events, time.Duration(placeTime.Load()))
	fmt.Fprintf(o.Progress, "bench: end to end: %.0f events/s (%.2f s)\n", res.EndToEndEventsPerS, d.Seconds())
	return nil
}

// place places n orders with Options.Clients concurrent clients, keys
// tag-0 ... tag-(n-1), and returns how long it took. Every answer must be
// 201.
func (p *pipeline) place(ctx context.Context, tag string, n int) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, p.opts.Clients)
	start := time.Now()
	for w := range p.opts.Clients {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				req := orders.PlaceRequest{SKU: skuName(int(i) % skuCount), Quantity: 1}
				r, err := p.client.Place(ctx, p.token, fmt.Sprintf("%s-%d", tag, i), req)
				if err == nil && r.Status != 201 {
					err = fmt.Errorf("status %d: %s", r.Status, r.Error)
				}
				if err != nil {
					errs[w] = fmt.Errorf("place order %s-%d: %w", tag, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return d, err
	}
	return d, ctx.Err()
}

// waitFor polls progress until it reaches want. It fails when an actor
// failed, ctx ended, or nothing moved for stallTimeout.
func (p *pipeline) waitFor(ctx context.Context, what string, progress func() int64, want int64) error {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	last, lastMove := int64(-1), time.Now()
	for {
		n := progress()
		if n >= want {
			return nil
		}
		if n != last {
			last, lastMove = n, time.Now()
		}
		if err := p.err(); err != nil {
			return err
		}
		if time.Since(lastMove) > stallTimeout {
			return fmt.Errorf("%s stalled at %d of %d for %v", what, n, want, stallTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s (%d of %d): %w", what, n, want, ctx.Err())
		case <-t.C:
		}
	}
}
