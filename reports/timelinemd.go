package reports

import (
	"fmt"
	"html"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// timeline writes a scenario's timeline in a <details>, open within its
// section: the diagram, the invariant results under it and the footnotes
// its labels point to.
func (p *printer) timeline(sc evidence.Scenario, tl Timeline) {
	if tl.Events == 0 && len(tl.Problems) == 0 {
		if sc.Status != evidence.StatusNotRun && tl.Unreadable == 0 {
			p.printf("No events to draw.\n\n")
		}
		return
	}
	p.printf("<details open><summary>Timeline: %s</summary>\n\n", html.EscapeString(timelineSummary(tl)))
	for _, pr := range tl.Problems {
		p.printf("- log problem: %s\n", inline(pr))
	}
	if len(tl.Problems) > 0 {
		p.printf("\n")
	}
	if len(tl.Mermaid) > 0 {
		body := strings.Join(tl.Mermaid, "\n")
		fence := fenceFor(body)
		p.printf("%smermaid\n%s\n%s\n\n", fence, body, fence)
	}
	p.timelineInvariants(sc, tl)
	p.nemesis(tl)
	if len(tl.Footnotes) > 0 {
		notes := make([]string, len(tl.Footnotes))
		for i, f := range tl.Footnotes {
			notes[i] = fmt.Sprintf("\\[%d\\] %s", i+1, inline(f))
		}
		p.printf("%s\n\n", strings.Join(notes, "<br>\n"))
	}
	p.printf("</details>\n\n")
}

// timelineSummary counts the events and says how each is shown.
func timelineSummary(tl Timeline) string {
	var s string
	switch {
	case tl.Events == 0:
		s = "no events"
	case tl.Drawn == tl.Events:
		s = fmt.Sprintf("%d %s, all drawn", tl.Events, plural(int64(tl.Events), "event", "events"))
	default:
		var how []string
		how = append(how, fmt.Sprintf("%d drawn", tl.Drawn))
		if tl.Tabulated > 0 {
			how = append(how, fmt.Sprintf("%d invariant %s in the table", tl.Tabulated, plural(int64(tl.Tabulated), "result", "results")))
		}
		if tl.Collapsed > 0 {
			how = append(how, fmt.Sprintf("%d folded into “… more” notes", tl.Collapsed))
		}
		if tl.Summarised > 0 {
			how = append(how, fmt.Sprintf("%d summarised by kind", tl.Summarised))
		}
		s = fmt.Sprintf("%d events: %s", tl.Events, strings.Join(how, ", "))
	}
	switch {
	case tl.Unreadable == 1:
		s += "; 1 line of the logs is not a valid event (named below) and is not drawn"
	case tl.Unreadable > 1:
		s += fmt.Sprintf("; %d lines of the logs are not valid events (named below) and are not drawn", tl.Unreadable)
	}
	return s
}

// timelineInvariants is the small table under a diagram: the invariants
// the scenario logged live, grouped by their live result and the
// verifier's replayed one.
func (p *printer) timelineInvariants(sc evidence.Scenario, tl Timeline) {
	if len(tl.Invariants) == 0 {
		return
	}
	replayed := map[string]string{}
	for _, ic := range p.r.Verdict.Invariants {
		if ic.Scenario == sc.ID {
			replayed[ic.ID] = rowsText(&ic.Replayed)
		}
	}
	type group struct {
		live, replayed string
		ids            []string
	}
	var groups []*group
	for _, inv := range tl.Invariants {
		live, rep := rowsText(inv.Rows), replayed[inv.ID]
		if rep == "" {
			rep = "not replayed"
		}
		var g *group
		for _, h := range groups {
			if h.live == live && h.replayed == rep {
				g = h
			}
		}
		if g == nil {
			g = &group{live: live, replayed: rep}
			groups = append(groups, g)
		}
		g.ids = append(g.ids, inv.ID)
	}
	var rows [][]string
	for _, g := range groups {
		rows = append(rows, []string{strings.Join(g.ids, ", "), g.live, g.replayed})
	}
	p.table([]string{"invariants logged at the end", "live rows (runner)", "replayed rows (verifier)"}, rows)
}

// rowsText is an invariant's result: "0 (holds)", "2 (VIOLATED)".
func rowsText(n *int64) string {
	switch {
	case n == nil:
		return "no count"
	case *n == 0:
		return "0 (holds)"
	}
	return strconv.FormatInt(*n, 10) + " (VIOLATED)"
}
