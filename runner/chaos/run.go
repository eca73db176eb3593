package chaos

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// SettleBound bounds how long the pipeline may take, once every fault is
// healed, to deliver and apply everything (the liveness bound): a
// committed event without an effect by then is missing.
const SettleBound = 30 * time.Second

// Needs is the shortest time a run with c needs: the load and its faults,
// the settling bound, and the starts and stops of its processes.
func Needs(c nemesis.Config) time.Duration {
	c.SetDefaults()
	return c.Duration + SettleBound + 20*time.Second
}

const (
	// workers send the load's requests concurrently.
	workers = 4
	// stopGrace is how long a process gets to stop cleanly at the end.
	stopGrace = 5 * time.Second
)

// Options configure a run of the engine.
type Options struct {
	// Config is what the schedule and the load are generated from
	// (defaults set).
	Config nemesis.Config
	// Log receives the nemesis's events (evidence.ActorNemesis): every
	// fault, heal, skipped fault, process start and process exit.
	Log *evidence.Log
	// Failf records a failure the nemesis itself saw (a broker restart
	// that lost records); the run goes on. Required.
	Failf func(format string, args ...any)
}

// Result is what a run did.
type Result struct {
	Load    LoadStats
	Settled Settled
	// Injected counts the faults injected, by kind (a skipped fault is
	// not counted).
	Injected map[string]int
}

// Run starts every slot of t under supervision, sends w's load, applies
// the schedule of opts.Config from when the load starts, heals every
// fault, waits for the pipeline to settle and stops every slot. Nothing
// it started is left running when it returns, also after an error or an
// interrupt.
func Run(ctx context.Context, opts Options, t Targets, w Workload) (Result, error) {
	r := &run{opts: opts, cfg: opts.Config, t: t, schedule: nemesis.Schedule(opts.Config),
		injected: map[string]int{}, held: map[int]bool{}}
	if err := t.check(r.schedule); err != nil {
		return Result{}, err
	}
	for _, s := range t.Slots {
		r.slots = append(r.slots, r.newSlot(s))
	}
	defer r.stopAll()
	if err := r.startAll(ctx); err != nil {
		return Result{}, err
	}
	t0 := time.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loaded := r.startLoad(loadCtx, w, t0, t0.Add(r.cfg.Duration+SettleBound))
	if err := r.runNemesis(ctx, t0); err != nil {
		return Result{}, err
	}
	healed := time.Now()
	ls, st := r.settle(ctx, w, loaded, healed)
	stopLoad()
	r.stopAll()
	if err := r.noted(); err != nil {
		return Result{}, err
	}
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return Result{Load: ls, Settled: st, Injected: maps.Clone(r.injected)}, nil
}

// check tells whether t has what every fault of schedule hits: its slot,
// its link, the broker or the database (a pipeline that cannot take a
// kind of fault leaves it out of nemesis.Config.Kinds).
func (t Targets) check(schedule []nemesis.Fault) error {
	slots := map[string]bool{}
	for _, s := range t.Slots {
		slots[s.Name] = true
	}
	for _, f := range schedule {
		var missing string
		switch f.Kind {
		case nemesis.Kill, nemesis.Pause:
			if !slots[f.Target] {
				missing = "no slot " + f.Target
			}
		case nemesis.ConnKill:
			switch {
			case !slots[f.Target]:
				missing = "no slot " + f.Target
			case t.Database == nil:
				missing = "no database"
			case t.Aimer != nil && (t.Links == nil || t.Links.Link(f.Target+">"+nemesis.TargetDatabase) == nil):
				missing = "no link " + f.Target + ">" + nemesis.TargetDatabase + " to drop an aimed process's connections at"
			}
		case nemesis.DBCrash:
			if t.Database == nil {
				missing = "no database"
			}
		case nemesis.Latency, nemesis.NetCut:
			if t.Links == nil || t.Links.Link(f.Target) == nil {
				missing = "no link " + f.Target
			}
		case nemesis.ProduceRefused, nemesis.ProduceTimeout, nemesis.AckLost, nemesis.FetchError, nemesis.Rebalance,
			nemesis.BrokerRestart:
			if t.Broker == nil {
				missing = "no broker"
			}
		}
		if missing != "" {
			return fmt.Errorf("nemesis fault %v: the targets have %s", f, missing)
		}
	}
	return nil
}

// run is one run of the engine.
type run struct {
	opts     Options
	cfg      nemesis.Config
	t        Targets
	schedule []nemesis.Fault
	slots    []*slot

	mu       sync.Mutex
	noteErr  error
	injected map[string]int // faults injected, by kind
	// held are the processes a lasting fault keeps stopped, by pid: no
	// other fault may stop or wake them meanwhile.
	held map[int]bool
}

// startAll starts every slot's supervision and waits until each has
// started once.
func (r *run) startAll(ctx context.Context) error {
	for _, s := range r.slots {
		go s.supervise(ctx)
	}
	for _, s := range r.slots {
		select {
		case <-s.started:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
		err := s.startErr
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("start %s: %w", s.name, err)
		}
	}
	return nil
}

// stopAll stops every slot, all at once, each with stopGrace to stop
// cleanly. It is idempotent.
func (r *run) stopAll() {
	var wg sync.WaitGroup
	for _, s := range r.slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop(stopGrace)
		}()
	}
	wg.Wait()
}

// note writes a nemesis event; the first error is kept for noted.
func (r *run) note(ev evidence.Event) {
	ev.Actor = evidence.ActorNemesis
	if err := r.opts.Log.Emit(ev); err != nil {
		r.mu.Lock()
		if r.noteErr == nil {
			r.noteErr = err
		}
		r.mu.Unlock()
	}
}

func (r *run) noted() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.noteErr
}

// slot returns the slot named name (the schedule only names existing
// ones).
func (r *run) slot(name string) *slot {
	for _, s := range r.slots {
		if s.name == name {
			return s
		}
	}
	panic("chaos: no slot " + name)
}

// oneLine joins the lines of a multi-line message (errors.Join) with "; ".
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
