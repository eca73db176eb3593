package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// summary prints the summary table of the seeds that finished.
func (x *exploration) summary(wall time.Duration, planned int, interrupted bool) {
	counts := map[string]int{}
	faults := map[string]int{}
	var events int64
	var chaosTime time.Duration
	for _, r := range x.results {
		counts[r.status]++
		events += r.events
		chaosTime += r.elapsed
		for _, part := range strings.Split(r.metrics["faults"], "+") {
			if k, n, ok := strings.Cut(part, ":"); ok {
				var v int
				fmt.Sscan(n, &v)
				faults[k] += v
			}
		}
	}
	rate := 0.0
	if chaosTime > 0 {
		rate = float64(events) / chaosTime.Seconds()
	}
	seeds := fmt.Sprintf("%d", len(x.results))
	if interrupted || len(x.results) < planned {
		seeds = fmt.Sprintf("%d of %d", len(x.results), planned)
	}
	t := tablewriter.NewTable(x.stdout,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
	// The faults go under the table, wrapped: in a cell they made it
	// about 190 columns wide.
	t.Header("seeds", "PASS", "FAIL", "INCONCLUSIVE", "ERROR", "faults", "events/s in chaos", "wall")
	total := 0
	for _, n := range faults {
		total += n
	}
	_ = t.Append(seeds, fmt.Sprint(counts[statusPass]), fmt.Sprint(counts[statusFail]), fmt.Sprint(counts[statusInconclusive]),
		fmt.Sprint(counts[statusError]), fmt.Sprint(total), fmt.Sprintf("%.0f", rate), wall.Round(time.Second).String())
	_ = t.Render()
	if len(faults) > 0 {
		kinds := strings.ReplaceAll(strings.ReplaceAll(spec.FormatFaultCounts(faults), "+", ", "), ":", " ")
		for i, l := range wrap("faults by kind: "+kinds, 100) {
			if i > 0 {
				l = "  " + l
			}
			fmt.Fprintln(x.stdout, l)
		}
	}
	if interrupted {
		fmt.Fprintln(x.stderr, "explore: interrupted; the summary covers the seeds that finished")
	}
	if x.plant != "" {
		if f := x.firstFailure(); f != nil {
			fmt.Fprintf(x.stdout, "planted bug %s: found by seed %d (rules %s)\n", x.plant, f.seed, strings.Join(f.rules, ","))
		} else {
			fmt.Fprintf(x.stdout, "planted bug %s: not found by these seeds (its rules: %s)\n", x.plant, strings.Join(plantRules(x.plant), ", "))
		}
	}
}

// progressBar draws "[#####.....] 37/100 seeds PASS 36 FAIL 1 ~5m left"
// on a terminal, rewritten in place; it draws nothing elsewhere.
type progressBar struct {
	w        io.Writer
	on       bool
	total    int
	finished int
	counts   map[string]int
	t0       time.Time
	drawn    bool
}

func newProgressBar(w io.Writer, mode string, raw io.Writer, total int) *progressBar {
	on := mode == "on" || (mode == "auto" && isTerminal(raw))
	return &progressBar{w: w, on: on, total: total, counts: map[string]int{}, t0: time.Now()}
}

// isTerminal tells whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (b *progressBar) start(seed int64) {
	if !b.on {
		return
	}
	const width = 30
	filled := width * b.finished / max(b.total, 1)
	left := ""
	if b.finished > 0 {
		per := time.Since(b.t0) / time.Duration(b.finished)
		left = fmt.Sprintf(" ~%v left", (per * time.Duration(b.total-b.finished)).Round(time.Second))
	}
	fmt.Fprintf(b.w, "\r[%s%s] %d/%d seeds  PASS %d FAIL %d  running seed %d%s\x1b[K",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), b.finished, b.total,
		b.counts[statusPass], b.counts[statusFail], seed, left)
	b.drawn = true
}

func (b *progressBar) done(status string) {
	b.finished++
	b.counts[status]++
}

// clear erases the bar before a line is printed.
func (b *progressBar) clear() {
	if b.on && b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.drawn = false
	}
}
