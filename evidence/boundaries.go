package evidence

import (
	"strings"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// ComputeBoundaries returns the boundary table: one row per boundary
// (commit, send, ack, in that order) with the design's injection, recovery
// and acceptance texts, and the status and figures of the U80 scenario that
// exercises it. A scenario absent from scs is NOT_RUN; the figures of a
// scenario that did not run are empty.
func ComputeBoundaries(scs []Scenario) []Boundary {
	rows := spec.Boundaries()
	out := make([]Boundary, 0, len(rows))
	for _, d := range rows {
		b := Boundary{
			Boundary:     d.Boundary,
			Injection:    d.Design.Injection,
			Recovery:     d.Design.Recovery,
			AcceptedWhen: d.Design.Accepted,
			Scenario:     d.ID,
			Status:       StatusNotRun,
		}
		if sc, ok := findScenario(scs, d.Suite, d.ID); ok && sc.Status != "" {
			b.Status = sc.Status
			if sc.Status != StatusNotRun {
				b.Figures = formatMetrics(sc.Metrics)
			}
		}
		out = append(out, b)
	}
	return out
}

func findScenario(scs []Scenario, suite, id string) (Scenario, bool) {
	for _, sc := range scs {
		if sc.Suite == suite && sc.ID == id {
			return sc, true
		}
	}
	return Scenario{}, false
}

func formatMetrics(ms []Metric) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Name + "=" + m.Value
	}
	return strings.Join(parts, " ")
}
