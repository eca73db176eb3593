package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// The load: the requests of nemesis.Load, in their order, handed to
// workers concurrent clients, each sent through the Workload until it
// has a final answer or the load's end.

// LoadStats is what the load got back.
type LoadStats struct {
	// Created, Rejected and Unanswered count the requests by final
	// answer; Attempts counts every sending.
	Created, Rejected, Unanswered, Attempts int
}

// startLoad starts the load and returns a channel that receives its stats
// once every request has a final answer or until has passed. Request i of
// n is handed out at t0 + i*duration/n, so that the load lasts as long as
// the faults.
func (r *run) startLoad(ctx context.Context, w Workload, t0, until time.Time) <-chan LoadStats {
	out := make(chan LoadStats, 1)
	reqs := nemesis.Load(r.cfg)
	next := make(chan nemesis.Request)
	go func() {
		defer close(next)
		for i, q := range reqs {
			if !sleepUntil(ctx, t0.Add(r.cfg.Duration*time.Duration(i)/time.Duration(len(reqs)))) {
				return
			}
			select {
			case next <- q:
			case <-ctx.Done():
				return
			}
		}
	}()
	var mu sync.Mutex
	var st LoadStats
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q := range next {
				answer, attempts := w.Send(ctx, q, until)
				mu.Lock()
				st.Attempts += attempts
				switch answer {
				case Accepted:
					st.Created++
				case Unanswered:
					st.Unanswered++
				default:
					st.Rejected++
				}
				mu.Unlock()
			}
		}()
	}
	go func() {
		wg.Wait()
		mu.Lock()
		out <- st
		mu.Unlock()
	}()
	return out
}
