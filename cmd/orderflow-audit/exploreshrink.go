package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// Shrinking a failure: fewer faults, then a shorter duration, then fewer
// orders (the chaos scenario's), each step kept only when the run fails
// again with the same rule, within a budget of runs. The schedule of a
// seed is a pure function of the seed and the flags (runner/nemesis, and
// audit.Schedule for an audit): --only-faults keeps some of its faults
// (nemesis.Keeps, for both), --orders does not move them, and a shorter
// --duration keeps a prefix of them, so every candidate is a flag change
// that `orderflow-audit run` (or `audit`) replays.

// shrinker holds the search.
type shrinker struct {
	x      *exploration
	run    func(ctx context.Context, c nemesis.Config) seedResult // one chaos run of the seed
	seed   int64
	rule   string
	budget int
	runs   int
	best   nemesis.Config
}

// shrink shrinks the failure r and prints the replay command.
func (x *exploration) shrink(ctx context.Context, r seedResult, budget int) {
	rule := r.rules[0]
	if x.plant != "" {
		for _, rr := range r.rules {
			if slices.Contains(plantRules(x.plant), rr) {
				rule = rr
				break
			}
		}
	}
	s := &shrinker{x: x, seed: r.seed, rule: rule, budget: budget, best: r.cfg,
		run: func(ctx context.Context, c nemesis.Config) seedResult { return x.runSeed(ctx, r.seed, c) }}
	fmt.Fprintf(x.stderr, "shrinking seed %d (rule %s, at most %d runs)...\n", r.seed, rule, budget)
	s.shrink(ctx)
	faults := x.subject.schedule(s.best)
	var parts []string
	for _, f := range faults {
		parts = append(parts, f.String())
	}
	fmt.Fprintf(x.stdout, "shrunk seed %d in %d run(s): %s; rule %s still fails\n", r.seed, s.runs, s.describe(s.best), rule)
	if len(parts) > 0 {
		fmt.Fprintf(x.stdout, "  faults: %s\n", strings.Join(parts, "; "))
	}
	fmt.Fprintln(x.stdout, "replay:")
	fmt.Fprintln(x.stdout, x.subject.replay(r.seed, s.best))
}

// shrink runs the three steps.
func (s *shrinker) shrink(ctx context.Context) {
	s.faults(ctx)
	s.duration(ctx)
	s.orders(ctx)
}

// shrinkConfirm is how many runs in a row a smaller schedule must fail
// with the rule to be kept. A failure whose exposure depends on timing
// may fail once by luck; a candidate kept on one run would give a replay
// command that fails less often than the schedule it came from.
const shrinkConfirm = 2

// try runs c until it has failed with the rule shrinkConfirm times in a
// row (kept) or once did not; each run spends one of the budget.
func (s *shrinker) try(ctx context.Context, c nemesis.Config) bool {
	for i := 1; i <= shrinkConfirm; i++ {
		if s.runs >= s.budget || ctx.Err() != nil {
			return false
		}
		s.runs++
		r := s.run(ctx, c)
		ok := r.status == statusFail && slices.Contains(r.rules, s.rule)
		verdict := r.status
		if len(r.rules) > 0 {
			verdict += " " + strings.Join(r.rules, ",")
		}
		note := ""
		switch {
		case ok && i == shrinkConfirm:
			note = " (kept)"
		case ok:
			note = " (once more)"
		}
		fmt.Fprintf(s.x.stderr, "  shrink run %d: %s: %s%s\n", s.runs, s.describe(c), verdict, note)
		if !ok {
			return false
		}
	}
	s.best = c
	return true
}

// describe is c's size: its faults, its orders (the chaos scenario's;
// an audit's load is its profile's), its duration.
func (s *shrinker) describe(c nemesis.Config) string {
	if c.Orders > 0 {
		return fmt.Sprintf("%d fault(s), %d order(s), %v", len(s.x.subject.schedule(c)), c.Orders, c.Duration)
	}
	return fmt.Sprintf("%d fault(s), %v", len(s.x.subject.schedule(c)), c.Duration)
}

// numbers are the fault numbers of c's schedule.
func (s *shrinker) numbers(c nemesis.Config) []int {
	var out []int
	for _, f := range s.x.subject.schedule(c) {
		out = append(out, f.N)
	}
	return out
}

// faults removes faults: first all of them, then halves, then one at a
// time (a coarse ddmin).
func (s *shrinker) faults(ctx context.Context) {
	cur := s.numbers(s.best)
	if len(cur) == 0 {
		return
	}
	if s.tryOnly(ctx, []int{}) {
		return
	}
	for chunk := len(cur) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i < len(cur) && len(cur) > 1; {
			cand := append(append([]int{}, cur[:i]...), cur[min(i+chunk, len(cur)):]...)
			if len(cand) > 0 && s.tryOnly(ctx, cand) {
				cur = cand
				continue
			}
			i += chunk
		}
	}
}

// tryOnly tries the schedule with only the faults numbered keep (none:
// no fault at all).
func (s *shrinker) tryOnly(ctx context.Context, keep []int) bool {
	c := s.best
	c.Only = slices.Clone(keep)
	if len(keep) == 0 {
		c.Only = nemesis.NoFaults
	}
	return s.try(ctx, c)
}

// orders halves the orders while the rule still fails.
func (s *shrinker) orders(ctx context.Context) {
	for s.best.Orders > 1 {
		c := s.best
		c.Orders = max(1, c.Orders/2)
		if !s.try(ctx, c) {
			return
		}
	}
}

// duration cuts the duration to just after the last fault kept ends.
func (s *shrinker) duration(ctx context.Context) {
	end := time.Second
	for _, f := range s.x.subject.schedule(s.best) {
		end = max(end, f.At+f.For+300*time.Millisecond)
	}
	end = end.Round(100 * time.Millisecond)
	if end < s.best.Duration {
		c := s.best
		c.Duration = end
		s.try(ctx, c)
	}
}
