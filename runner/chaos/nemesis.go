package chaos

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The nemesis: it applies the schedule, recording each fault as a fault
// event of the nemesis actor (point nemesis-<kind>, target, what was done
// and how it shows) and, for a fault that lasts, a heal event when it ends
// (with what it did meanwhile). A fault injected within the duration lasts
// its drawn length, also past the end of the duration: a relay paused late
// still wakes up a zombie, past its lease.

// heal ends a fault and says what it did meanwhile.
type heal func(ctx context.Context) (string, error)

// runNemesis applies the schedule from t0 and returns once the duration
// has passed and every fault is healed.
func (r *run) runNemesis(ctx context.Context, t0 time.Time) error {
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	keep := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	for _, f := range r.schedule {
		if !sleepUntil(ctx, t0.Add(f.At)) {
			break
		}
		h, err := r.inject(ctx, f)
		if err != nil {
			keep(fmt.Errorf("nemesis fault %v: %w", f, err))
			continue
		}
		if h == nil {
			continue
		}
		// A fault lasts For from when it took hold: an aimed one takes
		// hold when its target gets where it was aimed.
		until := time.Now().Add(f.For)
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(time.Until(until)):
			case <-ctx.Done():
			}
			// Healing must happen even after an interrupt: a paused
			// process, a cut link or a broker fault left on would outlive
			// the run.
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
			defer cancel()
			detail, err := h(hctx)
			if err != nil {
				keep(fmt.Errorf("heal %v: %w", f, err))
				detail = "healing failed: " + oneLine(err.Error())
			}
			r.note(evidence.Event{Kind: evidence.KindHeal, Point: point(f.Kind), Target: f.Target, Detail: detail})
		}()
	}
	sleepUntil(ctx, t0.Add(r.cfg.Duration))
	wg.Wait()
	r.resumeStopped()
	return firstErr
}

// resumeStopped sends SIGCONT to every process still stopped once every
// fault is healed, and records it: none should be (an aim that missed
// disarms itself in the process), but a process left stopped would
// outlive the faults.
func (r *run) resumeStopped() {
	for _, s := range r.slots {
		p, name := s.running()
		if p == nil || processState(p.Pid()) != "T" {
			continue
		}
		detail := fmt.Sprintf("%s (pid %d) was found stopped after every fault was healed; SIGCONT", name, p.Pid())
		if err := p.Signal(syscall.SIGCONT); err != nil {
			detail = fmt.Sprintf("%s (pid %d) was found stopped after every fault was healed; SIGCONT failed: %v", name, p.Pid(), err)
		}
		r.note(evidence.Event{Kind: evidence.KindHeal, Point: point(nemesis.Pause), Target: s.name, Detail: detail})
	}
}

func point(k nemesis.Kind) string { return spec.NemesisPrefix + string(k) }

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return true
	}
}

// inject applies f, records it, and returns how to heal it (nil for an
// instant fault). A fault that finds nothing to hit (no process running in
// the slot, no open transaction) is recorded as such and counted as not
// injected.
func (r *run) inject(ctx context.Context, f nemesis.Fault) (heal, error) {
	ev := evidence.Event{Kind: evidence.KindFault, Point: point(f.Kind), Target: f.Target}
	var h heal
	var detail string
	var err error
	switch f.Kind {
	case nemesis.Kill:
		detail, err = r.kill(f)
	case nemesis.Pause:
		detail, h, err = r.pause(f)
	case nemesis.ProduceRefused, nemesis.ProduceTimeout, nemesis.AckLost, nemesis.FetchError, nemesis.Rebalance:
		detail, h, err = r.brokerWindow(f)
	case nemesis.BrokerRestart:
		detail, err = r.restartBroker(ctx)
	case nemesis.ConnKill:
		detail, err = r.killConnection(ctx, f)
	case nemesis.DBCrash:
		detail, err = r.t.Database.Crash(ctx)
	case nemesis.Latency, nemesis.NetCut:
		detail, h, err = r.network(f)
	default:
		return nil, fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	if err != nil {
		return nil, err
	}
	if detail == "" {
		// Nothing to hit: recorded as skipped, so that the proof boundary
		// lists the kind as drawn and not injected rather than as run.
		r.note(evidence.Event{Kind: evidence.KindFaultSkipped, Point: point(f.Kind), Target: f.Target,
			Detail: fmt.Sprintf("fault #%d at %v: %s", f.N, f.At.Round(time.Millisecond), skipReasons[f.Kind])})
		return nil, nil
	}
	ev.Detail = fmt.Sprintf("fault #%d at %v: %s", f.N, f.At.Round(time.Millisecond), detail)
	r.note(ev)
	r.mu.Lock()
	r.injected[string(f.Kind)]++
	r.mu.Unlock()
	return h, nil
}

// skipReasons say why a fault of each kind that can find nothing to hit
// was skipped.
var skipReasons = map[nemesis.Kind]string{
	nemesis.Kill:    "nothing to kill: the slot had no running process (between two incarnations)",
	nemesis.Pause:   "nothing to pause: the slot had no running process, or it was stopped or held by another fault",
	nemesis.DBCrash: "no server of the run's own to crash: the database is not a private mariadbd",
	nemesis.ConnKill: "nothing to kill: no connection of the scenario's database was in a transaction or running a " +
		"statement while the nemesis looked",
}
