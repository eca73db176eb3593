package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// latencies reads the closed event logs: the time of each end-to-end
// order's order_committed event (after its transaction committed) and of
// its effect event (after the effect's transaction committed), both on
// this process's clock, and sets the percentiles of the differences.
func (p *pipeline) latencies(res *Result) error {
	committed := map[string]time.Time{}
	err := scanLog(filepath.Join(p.logDir, "orders.jsonl"), func(e *lineFields) {
		if e.Kind == evidence.KindOrderCommitted && strings.HasPrefix(e.Key, "e2e-") {
			committed[e.EventID] = e.Time
		}
	})
	if err != nil {
		return err
	}
	var lat []time.Duration
	for i := range p.opts.Consumers {
		err := scanLog(filepath.Join(p.logDir, fmt.Sprintf("consumer-%d.jsonl", i+1)), func(e *lineFields) {
			if t, ok := committed[e.EventID]; ok && e.Kind == evidence.KindEffect {
				lat = append(lat, e.Time.Sub(t))
			}
		})
		if err != nil {
			return err
		}
	}
	if len(lat) < len(committed) {
		return fmt.Errorf("latency: %d effects in the logs for %d orders placed end to end", len(lat), len(committed))
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	res.P50CommitToEffectMS = ms(percentile(lat, 50))
	res.P99CommitToEffectMS = ms(percentile(lat, 99))
	res.MaxCommitToEffectMS = ms(lat[len(lat)-1])
	return nil
}

// percentile is the nearest-rank percentile q of sorted (not empty).
func percentile(sorted []time.Duration, q int) time.Duration {
	i := (len(sorted)*q + 99) / 100
	return sorted[max(i-1, 0)]
}

// lineFields are the fields of an event line the latencies need.
type lineFields struct {
	Kind    evidence.Kind `json:"kind"`
	EventID string        `json:"event_id"`
	Key     string        `json:"key"`
	Time    time.Time     `json:"time"`
}

// scanLog calls fn for every line of the event log at path.
func scanLog(path string, fn func(*lineFields)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	defer f.Close()
	return evidence.ScanLines(f, func(l evidence.Line) error {
		var e lineFields
		if err := json.Unmarshal(l.Raw, &e); err != nil {
			return fmt.Errorf("latency: %s line %d: %w", path, l.No, err)
		}
		fn(&e)
		return nil
	})
}
