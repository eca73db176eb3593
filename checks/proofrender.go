package checks

import (
	"bufio"
	"fmt"
	"slices"
)

// What verify's text output says beyond the reasons (render.go calls
// these): what was audited on its first line, what the witnesses
// confirmed, and, when the reasons are many, how many there are per rule.

// auditedSuffix is what the first line adds after the status: the system
// under test, the suites and the run ("" for a verdict without it).
func auditedSuffix(v *Verdict) string {
	if v.Audited == "" {
		return ""
	}
	return " for " + v.Audited
}

// writeWitnessed says, per scenario, what the witnesses confirmed, as
// --json's witnessed does.
func writeWitnessed(b *bufio.Writer, v *Verdict) {
	if len(v.Witnessed) == 0 {
		return
	}
	fmt.Fprintf(b, "\nthe witnesses confirmed (%d scenario(s)):\n", len(v.Witnessed))
	for _, w := range v.Witnessed {
		fmt.Fprintf(b, "  %s: %s\n", Printable(w.Scenario), Printable(w.Summary))
	}
}

// manyReasons is how many reasons a reader can take in one by one; past
// it the output leads with a count per rule.
const manyReasons = 10

// writeRuleCounts leads a long list of reasons with how many there are of
// each rule, most first (then by rule), failures before inconclusive.
func writeRuleCounts(b *bufio.Writer, v *Verdict) {
	if len(v.Reasons) <= manyReasons {
		return
	}
	type count struct {
		rule   string
		status Status
		n      int
	}
	var counts []*count
	index := map[string]*count{}
	for _, r := range v.Reasons {
		k := string(r.Status) + " " + r.Rule
		c := index[k]
		if c == nil {
			c = &count{rule: r.Rule, status: r.Status}
			index[k] = c
			counts = append(counts, c)
		}
		c.n++
	}
	slices.SortStableFunc(counts, func(x, y *count) int {
		switch {
		case x.status != y.status:
			if x.status == Fail {
				return -1
			}
			return 1
		case x.n != y.n:
			return y.n - x.n
		case x.rule < y.rule:
			return -1
		case x.rule > y.rule:
			return 1
		}
		return 0
	})
	fmt.Fprintf(b, "\n%d reasons, by rule:\n", len(v.Reasons))
	for _, c := range counts {
		what := "failed"
		if c.status != Fail {
			what = "inconclusive"
		}
		fmt.Fprintf(b, "  %5d  %-32s %s\n", c.n, Printable(c.rule), Printable(what))
	}
}
