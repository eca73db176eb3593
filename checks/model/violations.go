package model

import (
	"fmt"
	"strings"
)

// Source locates an event: the log as named in the evidence, its line and
// its seq.
type Source struct {
	Log  string
	Line int64
	Seq  int64
}

func (s Source) String() string {
	if s.Log == "" {
		return fmt.Sprintf("seq %d", s.Seq)
	}
	return fmt.Sprintf("%s seq %d", s.Log, s.Seq)
}

// Violation is one illegal transition found by the model.
type Violation struct {
	Rule Rule
	// Inconclusive: an end-of-scenario finding while a log of the
	// scenario was cut, so that its missing cause may be in the lost
	// tail; otherwise a failure.
	Inconclusive bool
	Source       Source
	EventID      string
	Message      string
}

// violate records a violation of rule at the event at src.
func (m *Model) violate(rule Rule, src Source, eventID, format string, args ...any) {
	m.report(false, rule, src, eventID, format, args...)
}

// report records a violation, unless its rule's layer is off or the rule
// reached its cap (then it is only counted).
func (m *Model) report(inconclusive bool, rule Rule, src Source, eventID, format string, args ...any) {
	if m.off[rule] {
		return
	}
	if m.perRule[rule] >= maxViolationsPerRule {
		m.suppressed[rule]++
		return
	}
	m.perRule[rule]++
	m.violations = append(m.violations, Violation{
		Rule: rule, Inconclusive: inconclusive, Source: src, EventID: strings.Clone(eventID), Message: fmt.Sprintf(format, args...),
	})
}

// Violations returns what the model found, in event order, and how many
// more of each rule were found beyond the ones kept.
func (m *Model) Violations() ([]Violation, map[Rule]int) { return m.violations, m.suppressed }
