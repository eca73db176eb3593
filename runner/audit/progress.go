package audit

import (
	"context"
	"sync"
	"time"
)

// Progress is what the audit reports once a second while the load runs
// and while the pipeline settles: what a person watching wants to know,
// read as any client reads it (never the verdict's basis).
type Progress struct {
	Phase string        // "load" or "settle"
	Left  time.Duration // until the load ends, or the liveness bound expires
	// Committed counts the outbox rows, Records the topic's records,
	// Effects the effect rows (-1: the profile has no effect table).
	Committed, Records, Effects int64
	// Requests counts the requests answered or timed out so far, Faults
	// the faults applied.
	Requests, Faults int
}

// progressInterval is how often Options.OnProgress is called.
const progressInterval = time.Second

// reporter calls Options.OnProgress every progressInterval until stop.
type reporter struct {
	s  *scope
	cl *client
	nr *nemesisRun

	mu    sync.Mutex
	phase string
	until time.Time
	last  Progress
}

func (rp *reporter) setPhase(phase string, until time.Time) {
	rp.mu.Lock()
	rp.phase, rp.until = phase, until
	rp.mu.Unlock()
}

// run reports until ctx ends.
func (rp *reporter) run(ctx context.Context, on func(Progress)) {
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		on(rp.sample(ctx))
	}
}

// sample takes the figures, each within a short bound; a figure that
// cannot be had keeps its last value.
func (rp *reporter) sample(ctx context.Context) Progress {
	qctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	rp.mu.Lock()
	p := rp.last
	p.Phase, p.Left = rp.phase, max(0, time.Until(rp.until)).Round(time.Second)
	rp.mu.Unlock()
	prof := rp.s.opts.Profile
	var n int64
	if rp.s.db.QueryRowContext(qctx, "SELECT COUNT(*) FROM `"+prof.Outbox.Table+"`").Scan(&n) == nil {
		p.Committed = n
	}
	p.Effects = -1
	if prof.Effect != nil && rp.s.db.QueryRowContext(qctx, "SELECT COUNT(*) FROM `"+prof.Effect.Table+"`").Scan(&n) == nil {
		p.Effects = n
	}
	if end, err := rp.s.kafka.EndOffset(qctx, prof.Topic.Name); err == nil {
		p.Records = end
	}
	rp.cl.mu.Lock()
	p.Requests = len(rp.cl.history)
	rp.cl.mu.Unlock()
	p.Faults = 0
	for _, c := range rp.nr.counts() {
		p.Faults += c
	}
	rp.mu.Lock()
	rp.last = p
	rp.mu.Unlock()
	return p
}
