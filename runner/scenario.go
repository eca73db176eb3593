package runner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Scenario is a scenario of the spec with the function that runs it.
type Scenario struct {
	spec.Scenario
	// Run drives the scenario. It returns an error only when it could not
	// run (infrastructure); a scenario that ran and did not hold reports
	// that through its metrics (judged against the spec) or Result.Failf.
	Run func(ctx context.Context, env *Env) error
}

// runFunc runs one scenario (Scenario.Run).
type runFunc = func(context.Context, *Env) error

// runs binds every scenario id of the spec to the function that runs it.
// Each topic file holds the table of its own scenarios beside their
// functions (ackRuns in ack.go, ...); runs joins those tables, and an id
// in two of them panics at start. TestEveryScenarioRuns holds runs and
// the spec to each other.
var runs = joinRuns(placementRuns, tokenRuns, businessRuns, commitRuns, chainRuns, sendRuns, ackRuns, killRuns,
	lifecycleRuns, effectErrorRuns, restartRuns, twoConsumersRuns, rebalanceRuns, leaseRuns, publishRuns, versionsRuns, sweepRuns,
	// chaos.go, which another change is moving to a package of its own;
	// its timeout depends on --duration: checkChaos.
	map[string]runFunc{"chaos": chaos})

// joinRuns joins the topic files' tables.
func joinRuns(tables ...map[string]runFunc) map[string]runFunc {
	out := map[string]runFunc{}
	for _, t := range tables {
		for id, run := range t {
			if _, dup := out[id]; dup {
				panic("runner: scenario " + id + " is in two run tables")
			}
			out[id] = run
		}
	}
	return out
}

// Scenarios returns every scenario of the spec in run order, each with its
// run function (nil for a spec entry without one: TestEveryScenarioRuns
// fails then).
func Scenarios() []Scenario {
	all := spec.All()
	out := make([]Scenario, len(all))
	for i, s := range all {
		out[i] = Scenario{Scenario: s, Run: runs[s.ID]}
	}
	return out
}

// Bound returns the ids that have a run function, sorted.
func Bound() []string {
	ids := make([]string, 0, len(runs))
	for id := range runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Select returns the scenarios named in ids (all when ids is empty), in run
// order. An unknown id is an error listing the valid ones.
func Select(ids []string) ([]Scenario, error) { return SelectModes(ids, "") }

// SelectModes is Select with the consumer scenarios in the consumer modes
// of mode (`run --consumer-mode`: record, batch or both; "" is record):
// a batch variant (spec.BatchID) runs its scenario's function.
func SelectModes(ids []string, mode string) ([]Scenario, error) {
	if err := spec.CheckConsumerMode(mode); err != nil {
		return nil, err
	}
	sel, err := spec.Select(ids)
	if err != nil {
		return nil, err
	}
	sel = spec.WithModes(sel, mode)
	out := make([]Scenario, len(sel))
	for i, s := range sel {
		out[i] = Scenario{Scenario: s, Run: runs[s.Base()]}
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

// Failf records a failed condition that is not a metric.
func (r *Result) Failf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// judge checks the metrics against the scenario's spec: each with its
// accepted value and, when the run completed, every metric in line order (a
// run that stopped early says why through its error).
func (r *Result) judge(s spec.Scenario, completed bool) {
	got := make([]string, len(r.Metrics))
	for i, m := range r.Metrics {
		got[i] = m.Name
		if want := s.Accept(m.Name); want != "" && m.Value != want {
			r.failures = append(r.failures, fmt.Sprintf("%s=%s, want %s", m.Name, m.Value, want))
		}
	}
	if want := s.MetricNames(); completed && !slices.Equal(got, want) {
		r.failures = append(r.failures, fmt.Sprintf("the runner measured %s; the spec's metrics are %s",
			strings.Join(got, " "), strings.Join(want, " ")))
	}
}

// Passed tells whether every condition held.
func (r *Result) Passed() bool { return len(r.failures) == 0 }

// Reason joins the failed conditions.
func (r *Result) Reason() string { return strings.Join(r.failures, "; ") }

// Plant is a planted bug (a negative control); spec.Plants lists them.
type Plant = plant.Bug

// ParsePlant checks the name of a planted bug ("" is a clean run).
func ParsePlant(s string) (Plant, error) { return plant.Parse(s) }
