package reports

import (
	"fmt"
	"sort"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// invariantRows aggregates the live results of the evidence and the
// replayed results of the verdict per invariant id.
func invariantRows(ev *evidence.Evidence, v *checks.Verdict) []InvariantRow {
	live := map[string]map[string]int64{}
	replayed := map[string]map[string]int64{}
	meaning := map[string]string{}
	var scenarios []string // scenarios with any invariant result, evidence order
	seenScenario := map[string]bool{}
	note := func(sc string) {
		if !seenScenario[sc] {
			seenScenario[sc] = true
			scenarios = append(scenarios, sc)
		}
	}
	for _, sc := range ev.Scenarios {
		for _, inv := range sc.Invariants {
			if live[inv.ID] == nil {
				live[inv.ID] = map[string]int64{}
			}
			live[inv.ID][sc.ID] = inv.Rows
			note(sc.ID)
		}
	}
	for _, ic := range v.Invariants {
		if replayed[ic.ID] == nil {
			replayed[ic.ID] = map[string]int64{}
		}
		replayed[ic.ID][ic.Scenario] = ic.Replayed
		if ic.Meaning != "" && meaning[ic.ID] == "" {
			meaning[ic.ID] = ic.Meaning
		}
		if _, ok := live[ic.ID][ic.Scenario]; !ok {
			// The verifier compared a live result the evidence does not
			// list as such (it should not happen; show it rather than
			// drop it).
			if live[ic.ID] == nil {
				live[ic.ID] = map[string]int64{}
			}
			note(ic.Scenario)
		}
	}
	ids := map[string]bool{}
	for id := range live {
		ids[id] = true
	}
	for id := range replayed {
		ids[id] = true
	}
	order := orderIDs(ids)
	rows := make([]InvariantRow, 0, len(order))
	for _, id := range order {
		m := meaning[id]
		if m == "" {
			m = invariantMeanings[id]
		}
		if m == "" {
			m = "(meaning not recorded)"
		}
		rows = append(rows, InvariantRow{
			ID:       id,
			Meaning:  m,
			Live:     resultCell(live[id], scenarios, "no live result"),
			Replayed: resultCell(replayed[id], scenarios, "not replayed"),
			Holds:    allZero(live[id], scenarios) && allZero(replayed[id], scenarios),
		})
	}
	return rows
}

func orderIDs(ids map[string]bool) []string {
	var out []string
	for _, id := range invariantOrder {
		if ids[id] {
			out = append(out, id)
			delete(ids, id)
		}
	}
	var rest []string
	for id := range ids {
		rest = append(rest, id)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// allZero tells whether rows has 0 for every one of scenarios.
func allZero(rows map[string]int64, scenarios []string) bool {
	for _, sc := range scenarios {
		if n, ok := rows[sc]; !ok || n != 0 {
			return false
		}
	}
	return len(scenarios) > 0
}

// resultCell summarises rows per scenario: "holds: 0 rows in 5 scenarios",
// or the violations by name first, then the others.
func resultCell(rows map[string]int64, scenarios []string, missing string) string {
	var bad, zero, absent []string
	var total int64
	for _, sc := range scenarios {
		n, ok := rows[sc]
		switch {
		case !ok:
			absent = append(absent, sc)
		case n == 0:
			zero = append(zero, sc)
		default:
			bad = append(bad, fmt.Sprintf("%d %s in %s", n, plural(n, "row", "rows"), sc))
			total += n
		}
	}
	if len(rows) == 0 {
		return missing
	}
	var parts []string
	if len(bad) > 0 {
		parts = append(parts, fmt.Sprintf("VIOLATED: %s", joinComma(bad)))
		if len(zero) > 0 {
			parts = append(parts, fmt.Sprintf("0 rows in %d other %s", len(zero), plural(int64(len(zero)), "scenario", "scenarios")))
		}
	} else {
		parts = append(parts, fmt.Sprintf("holds: 0 rows in %d %s", len(zero), plural(int64(len(zero)), "scenario", "scenarios")))
	}
	if len(absent) > 0 {
		parts = append(parts, fmt.Sprintf("%s in %s", missing, joinComma(absent)))
	}
	return joinSemi(parts)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func joinComma(xs []string) string { return strings.Join(xs, ", ") }
func joinSemi(xs []string) string  { return strings.Join(xs, "; ") }
