package evidence

import (
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Audited says what a run audited, for the first line of the report and of
// verify's output: the system under test, the suites of its scenarios and
// the run, as in "the orderflow-audit reference pipeline, suites U80 and
// EXT, run 20261201t211246_6b1f". A reader must not take a PASS of the
// reference pipeline for a PASS of their own service.
func (ev *Evidence) Audited() string {
	return SystemAudited(ev.Environment.SUT) + ", " + suitesText(ev.Scenarios) + ", run " + ev.Run.ID
}

// SystemAudited names the system under test: the reference pipeline
// (also for evidence written before the system under test was recorded),
// or another by the name it gave.
func SystemAudited(s *SUTEnv) string {
	if s == nil || s.Name == spec.ReferenceSUT {
		return "the orderflow-audit reference pipeline"
	}
	return "the pipeline " + strings.TrimSpace(s.Name)
}

// suitesText names the suites of scs, in the spec's order (U79, U80, EXT,
// then any other).
func suitesText(scs []Scenario) string {
	order := []string{spec.SuiteU79, spec.SuiteU80, spec.SuiteEXT}
	var suites []string
	for _, sc := range scs {
		if !slices.Contains(suites, sc.Suite) {
			suites = append(suites, sc.Suite)
		}
	}
	if len(suites) == 0 {
		return "no suite"
	}
	rank := func(s string) int {
		if i := slices.Index(order, s); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(suites, func(a, b string) int { return rank(a) - rank(b) })
	if len(suites) == 1 {
		return "suite " + suites[0]
	}
	return "suites " + joinAnd(suites)
}
