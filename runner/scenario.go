package runner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
)

// Suites of scenarios.
const (
	SuiteU79 = "U79"
	SuiteU80 = "U80"
	SuiteEXT = "EXT"
)

// Scenario is one named experiment on the system under test.
type Scenario struct {
	// ID is stable: it names the scenario in its observation line, the
	// evidence, the event-log paths and the report.
	ID          string
	Suite       string
	Boundary    string
	Description string
	// FaultPoints are the named points the scenario arms (or, for the
	// commit boundary, the real database error it provokes).
	FaultPoints []string
	// MinTimeout is the shortest per-scenario --timeout it can pass with
	// (zero: DefaultMinTimeout); a shorter one is refused before the run.
	MinTimeout time.Duration
	// Run drives the scenario. It returns an error only when it could not
	// run (infrastructure); a scenario that ran and did not hold reports
	// that through Result.
	Run func(ctx context.Context, env *Env) error
}

// FaultCommitConflict names the commit-boundary injection: a real unique-key
// conflict on a seeded decoy outbox row, not a fault point in our code.
const FaultCommitConflict = "outbox-unique-conflict"

var registry []Scenario

func register(s Scenario) { registry = append(registry, s) }

// Scenarios returns every registered scenario in run order: U79, U80, EXT.
func Scenarios() []Scenario {
	out := append([]Scenario(nil), registry...)
	order := map[string]int{SuiteU79: 0, SuiteU80: 1, SuiteEXT: 2}
	sort.SliceStable(out, func(i, j int) bool { return order[out[i].Suite] < order[out[j].Suite] })
	return out
}

// Select returns the scenarios named in ids (all when ids is empty), in run
// order. An unknown id is an error listing the valid ones.
func Select(ids []string) ([]Scenario, error) {
	all := Scenarios()
	if len(ids) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []Scenario
	for _, s := range all {
		if want[s.ID] {
			out = append(out, s)
			delete(want, s.ID)
		}
	}
	if len(want) > 0 {
		var unknown, valid []string
		for id := range want {
			unknown = append(unknown, id)
		}
		sort.Strings(unknown)
		for _, s := range all {
			valid = append(valid, s.ID)
		}
		return nil, fmt.Errorf("unknown scenario %s (valid: %s)", strings.Join(unknown, ", "), strings.Join(valid, ", "))
	}
	return out, nil
}

// Result collects a scenario's metrics, in line order, and the conditions
// that decide its status.
type Result struct {
	Metrics  []evidence.Metric
	failures []string
}

// Metric records name=value; value is formatted with %v.
func (r *Result) Metric(name string, value any) {
	r.Metrics = append(r.Metrics, evidence.Metric{Name: name, Value: fmt.Sprint(value)})
}

// Expect records name=got and a failure when got != want.
func (r *Result) Expect(name string, got, want any) {
	r.Metric(name, got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		r.failures = append(r.failures, fmt.Sprintf("%s=%v, want %v", name, got, want))
	}
}

// Failf records a failed condition that is not a metric.
func (r *Result) Failf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// Passed tells whether every condition held.
func (r *Result) Passed() bool { return len(r.failures) == 0 }

// Reason joins the failed conditions.
func (r *Result) Reason() string { return strings.Join(r.failures, "; ") }

func points(ps ...fault.Point) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// Plant is a planted bug (a negative control); see PlantedBugs.
type Plant = plant.Bug

// ParsePlant checks the name of a planted bug ("" is a clean run).
func ParsePlant(s string) (Plant, error) { return plant.Parse(s) }

// PlantedBugs lists the bugs that can be planted, with a description each.
func PlantedBugs() []struct {
	Bug         Plant
	Description string
} {
	return plant.All
}
