package blackbox

import (
	"fmt"
	"sort"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// Timeline is the story of one lost event told from the binlog alone, in
// commit order: for a cursor relay, the cursor below the event's
// position, the rows above it that committed first, the cursor passing
// its position while no committed row held it, the event's own commit
// below the cursor, and the cursor's next write; for the other kinds, the
// event's commit and the progress that passed it. The report shows it for
// the first lost event, so that a reader sees why the rule failed without
// reading the binlog.
type Timeline struct {
	Rule  string `json:"rule"`
	Event string `json:"event"`
	// Position is the event's row's value of progress.against (cursor
	// kind), as a decimal; empty for the other kinds.
	Position string `json:"position,omitempty"`
	Steps    []Step `json:"steps"`
}

// Step is one transaction of a timeline: where it is in the binlog, when
// it started on the server (the binlog's resolution is a second), and what
// it did that matters to the event.
type Step struct {
	GTID    string `json:"gtid"`
	Binlog  string `json:"binlog"`
	Started string `json:"started"`
	What    string `json:"what"`
	tx      int
}

// timeline builds the Timeline of the first event lost for certain
// (lost-skipped first, then lost-acked-not-published), or nil when none
// was.
func (c *checker) timeline() *Timeline {
	var first *event
	var rule string
	for _, want := range []string{RuleLostSkipped, RuleLostAcked} {
		for _, r := range c.reasons {
			if r.Rule == want && r.Status == Fail {
				if ev := c.m.eventByID(r.Event); ev != nil && ev.passed >= 0 {
					first, rule = ev, want
					break
				}
			}
		}
		if first != nil {
			break
		}
	}
	if first == nil {
		return nil
	}
	m := c.m
	t := &Timeline{Rule: rule, Event: first.id}
	step := func(tx int, format string, args ...any) {
		s := Step{tx: tx, What: fmt.Sprintf(format, args...)}
		s.GTID, s.Binlog = m.where(tx)
		s.Started = m.txs[tx].time.UTC().Format("15:04:05")
		t.Steps = append(t.Steps, s)
	}
	pr := m.prof.Outbox.Progress
	if first.against.set && len(m.cursor) > 0 {
		k := first.against
		t.Position = k.String()
		col := pr.Table + "." + pr.Column
		// The write that passed k is the first at least k (cursorPasses);
		// a transaction may write the cursor row more than once.
		var passedTo num
		for i, w := range m.cursor {
			if w.value.cmp(k) >= 0 {
				passedTo = w.value
				for j := i - 1; j >= 0; j-- {
					if prev := m.cursor[j]; prev.tx < w.tx {
						step(prev.tx, "the cursor %s set to %s, below the event's position %s", col, prev.value.String(), k.String())
						break
					}
				}
				break
			}
		}
		if passedTo.set {
			// The rows above k the relay could read past the gap: committed
			// before the cursor passed k, at most as high as it went.
			var above []*event
			for ev := range m.events.each() {
				if ev.tx < first.passed && ev.against.set && ev.against.cmp(k) > 0 && ev.against.cmp(passedTo) <= 0 {
					above = append(above, ev)
				}
			}
			if n := len(above); n > 0 {
				sort.Slice(above, func(i, j int) bool { return above[i].against.cmp(above[j].against) < 0 })
				last := above[0]
				for _, ev := range above {
					if ev.tx > last.tx {
						last = ev
					}
				}
				step(last.tx, "%d row(s) above position %s committed before the cursor passed it (positions %s to %s); this is the last of them",
					n, k.String(), above[0].against.String(), above[n-1].against.String())
			}
			what := "no committed row held it yet"
			switch {
			case first.tx == first.passed:
				what = "its row commits in this same transaction"
			case first.tx < first.passed:
				what = "its row had committed"
			}
			step(first.passed, "the cursor %s set to %s: past the event's position %s, where %s", col, passedTo.String(), k.String(), what)
		}
		step(first.tx, "event %s's row committed at position %s", first.id, k.String())
		for _, w := range m.cursor {
			if w.tx > first.tx && w.tx > first.passed {
				step(w.tx, "the cursor's next write after that commit: %s set to %s, not below %s again", col, w.value.String(), k.String())
				break
			}
		}
	} else {
		step(first.tx, "event %s's row committed", first.id)
		if first.passed != first.tx {
			step(first.passed, "the relay's progress passed the event: %s", c.progressDone())
		}
	}
	sort.SliceStable(t.Steps, func(i, j int) bool { return t.Steps[i].tx < t.Steps[j].tx })
	return t
}

// progressDone says how the relay's progress marks an event done, for a
// step of a timeline.
func (c *checker) progressDone() string {
	o := c.m.prof.Outbox
	switch o.Progress.Kind {
	case profile.ProgressStatus:
		return "its row's " + o.Table + "." + o.Progress.Column + " set to done"
	case profile.ProgressCompleted:
		return "its row's " + o.Table + "." + o.Progress.Column + " set"
	case profile.ProgressDelete:
		return "its row deleted from " + o.Table
	}
	return "progress " + string(o.Progress.Kind)
}
