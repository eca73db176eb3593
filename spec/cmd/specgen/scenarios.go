package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// scenarioBlocks are docs/scenarios.md's tables: one per suite with a
// scenario in the default selection, in run order, and the opt-in
// scenarios (chaos, the call sweep) apart.
func scenarioBlocks() map[string]string {
	blocks := map[string]string{}
	for _, suite := range spec.Suites {
		if !slices.ContainsFunc(spec.All(), func(s spec.Scenario) bool { return s.Suite == suite && !s.OptIn }) {
			continue
		}
		blocks["scenarios "+suite] = scenarioTable(func(s spec.Scenario) bool { return s.Suite == suite && !s.OptIn })
	}
	blocks["scenarios opt-in"] = scenarioTable(func(s spec.Scenario) bool { return s.OptIn })
	return blocks
}

// scenarioTable is the table of the scenarios keep selects, in run order.
func scenarioTable(keep func(spec.Scenario) bool) string {
	var b strings.Builder
	b.WriteString("| id | boundary | faults | what it does | metrics, in line order | accepted when |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, s := range spec.All() {
		if !keep(s) {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", s.ID, s.Boundary, faultsCell(s), doesCell(s), metricsCell(s), acceptCell(s))
	}
	return b.String()
}

// faultsCell names the faults the scenario injects, each with how.
func faultsCell(s spec.Scenario) string {
	if len(s.Faults) == 0 {
		return "-"
	}
	parts := make([]string, len(s.Faults))
	for i, f := range s.Faults {
		parts[i] = fmt.Sprintf("`%s` (%s)", f.Point, f.Injection)
	}
	return strings.Join(parts, ", ")
}

// doesCell is the description, then the details on a line of their own.
func doesCell(s spec.Scenario) string {
	if s.Details == "" {
		return s.Description
	}
	return s.Description + "<br>" + s.Details
}

// metricsCell is each metric with its meaning.
func metricsCell(s spec.Scenario) string {
	parts := make([]string, len(s.Metrics))
	for i, m := range s.Metrics {
		parts[i] = fmt.Sprintf("`%s`: %s", m.Name, m.Means)
	}
	return strings.Join(parts, "; ")
}

// acceptCell is the accepted values in line order, the metrics that are
// only reported, and what the scenario needs beyond its line.
func acceptCell(s spec.Scenario) string {
	var accepted, reported []string
	for _, m := range s.Metrics {
		if m.Accept != "" {
			accepted = append(accepted, m.Name+"="+m.Accept)
		} else {
			reported = append(reported, "`"+m.Name+"`")
		}
	}
	var parts []string
	if len(accepted) > 0 {
		parts = append(parts, "`"+strings.Join(accepted, " ")+"`")
	}
	if len(reported) > 0 {
		parts = append(parts, strings.Join(reported, ", ")+" reported, not judged")
	}
	if s.Also != "" {
		parts = append(parts, "also (not in the line): "+s.Also)
	}
	return strings.Join(parts, "; ")
}
