package chaos

import (
	"context"
	"fmt"
	"time"
)

// Settling: once every fault is healed the pipeline has SettleBound to
// reach quiescence, as the Workload tells it (for the reference: every
// request answered finally, every intent SENT, every intent with its
// effect, and the group's committed offsets at the end of every
// partition).

// stuckAfter ends settling early: a pipeline whose figures have not moved
// for this long, with every fault healed, is not going to settle (a
// correct one moves within a lease or two).
const stuckAfter = 8 * time.Second

// Settled is what settling found.
type Settled struct {
	OK   bool
	Took time.Duration // from the heal to quiescence (or to the bound)
	Last string        // what was still missing at the bound
}

// settle waits for the load to finish and the pipeline to reach
// quiescence, at most SettleBound after healed.
func (r *run) settle(ctx context.Context, w Workload, loaded <-chan LoadStats, healed time.Time) (LoadStats, Settled) {
	deadline := healed.Add(SettleBound)
	var ls LoadStats
	select {
	case ls = <-loaded:
	case <-time.After(time.Until(deadline)):
		return ls, Settled{Took: time.Since(healed), Last: "the load had requests without a final answer"}
	case <-ctx.Done():
		return ls, Settled{Last: "interrupted"}
	}
	var last string
	lastChange := time.Now()
	for {
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		what, err := w.Quiescent(qctx)
		cancel()
		if err == nil && what == "" {
			return ls, Settled{OK: true, Took: time.Since(healed)}
		}
		if err != nil {
			what = err.Error()
		}
		if what != last {
			last, lastChange = what, time.Now()
		}
		if stuck := time.Since(lastChange) > stuckAfter; stuck || time.Now().After(deadline) || ctx.Err() != nil {
			if stuck {
				what += fmt.Sprintf(" (no progress for %v)", stuckAfter)
			}
			return ls, Settled{Took: time.Since(healed), Last: what}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
