package main

import (
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// readmeBlocks are the README's example observation lines (what a clean
// run of the default selection prints) and its scenario count.
func readmeBlocks() map[string]string {
	var b strings.Builder
	b.WriteString("```text\n")
	n := 0
	for _, s := range spec.All() {
		if s.OptIn {
			continue
		}
		n++
		ms := make([]evidence.Metric, len(s.Metrics))
		for i, m := range s.Metrics {
			v := m.Accept
			if v == "" {
				v = m.Example
			}
			ms[i] = evidence.Metric{Name: m.Name, Value: v}
		}
		b.WriteString(evidence.FormatLine(s.Suite, s.ID, evidence.StatusPass, ms) + "\n")
	}
	b.WriteString("```\n")
	return map[string]string{
		"observation-lines": b.String(),
		"scenario-count":    strconv.Itoa(n) + " scenarios",
	}
}
