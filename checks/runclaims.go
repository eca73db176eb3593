package checks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// evidenceLevel checks what the file claims about the run as a whole.
func (c *checker) evidenceLevel() {
	ev := c.ev
	c.v.Audited = ev.Audited()
	if ev.Run.Interrupted {
		c.inconclusive("", "run-interrupted", "the run was interrupted before every selected scenario finished: "+
			"what did not run cannot be concluded")
	}
	c.selection()
	c.layers = c.systemUnderTest()
	c.codeThatRan()
	if ev.Run.End.Before(ev.Run.Start) {
		c.mismatch("", "time-outside-run", "run.end", ev.Run.End.Format(time.RFC3339Nano), "not before "+ev.Run.Start.Format(time.RFC3339Nano),
			"the run ends before it starts: its times were edited, so the events' times cannot be checked against them")
	}
	want := evidence.Summarize(ev.Scenarios)
	for _, f := range []struct {
		name        string
		claim, want int
	}{
		{"total", ev.Summary.Total, want.Total}, {"passed", ev.Summary.Passed, want.Passed},
		{"failed", ev.Summary.Failed, want.Failed}, {"not_run", ev.Summary.NotRun, want.NotRun},
	} {
		if f.claim != f.want {
			c.mismatch("", "summary-mismatch", "summary."+f.name, strconv.Itoa(f.claim), strconv.Itoa(f.want),
				"summary.%s says %d; the scenarios listed give %d", f.name, f.claim, f.want)
		}
	}
	wantB := evidence.ComputeBoundaries(ev.Scenarios)
	for i := 0; i < max(len(wantB), len(ev.Boundaries)); i++ {
		switch {
		case i >= len(ev.Boundaries):
			c.mismatch("", "boundary-mismatch", "boundaries["+wantB[i].Boundary+"]", "", wantB[i].Boundary,
				"the boundary table lacks the %s row", wantB[i].Boundary)
		case i >= len(wantB):
			c.mismatch("", "boundary-mismatch", "boundaries["+ev.Boundaries[i].Boundary+"]", ev.Boundaries[i].Boundary, "",
				"the boundary table has an extra row %s", ev.Boundaries[i].Boundary)
		case ev.Boundaries[i] != wantB[i]:
			got, w := ev.Boundaries[i], wantB[i]
			c.mismatch("", "boundary-mismatch", "boundaries["+w.Boundary+"]", boundaryText(got), boundaryText(w),
				"row %d of the boundary table is not what the scenarios give (%s)", i+1, diffBoundary(got, w))
		}
	}
	// The proof-boundary matrix is checked once every scenario was
	// replayed (proofBoundary, proof.go): its faults rest on the events.
}

// firstDiff names the first entry where two proof rows differ.
func firstDiff(a, b evidence.ProofRow) (field, x, y string) {
	if a.Category != b.Category {
		return "category", a.Category, b.Category
	}
	for _, l := range []struct {
		name string
		a, b []string
	}{{"had", a.Had, b.Had}, {"cannot_infer", a.CannotInfer, b.CannotInfer}} {
		for i := 0; i < max(len(l.a), len(l.b)); i++ {
			var p, q string
			if i < len(l.a) {
				p = l.a[i]
			}
			if i < len(l.b) {
				q = l.b[i]
			}
			if p != q {
				return fmt.Sprintf("%s[%d]", l.name, i), p, q
			}
		}
	}
	return "", "", ""
}

func equalStrings(a, b []string) bool { return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b)) }

func boundaryText(b evidence.Boundary) string {
	return b.Scenario + " " + b.Status + " " + b.Figures
}

func diffBoundary(a, b evidence.Boundary) string {
	var d []string
	for _, f := range []struct{ name, a, b string }{
		{"boundary", a.Boundary, b.Boundary}, {"injection", a.Injection, b.Injection}, {"recovery", a.Recovery, b.Recovery},
		{"accepted_when", a.AcceptedWhen, b.AcceptedWhen}, {"scenario", a.Scenario, b.Scenario},
		{"status", a.Status, b.Status}, {"figures", a.Figures, b.Figures},
	} {
		if f.a != f.b {
			d = append(d, fmt.Sprintf("%s %q, want %q", f.name, f.a, f.b))
		}
	}
	return strings.Join(d, "; ")
}
