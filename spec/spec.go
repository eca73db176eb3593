// Package spec declares, once, what every scenario of orderflow-audit is:
// its id, suite, boundary, the faults it injects, what it does, and the
// metrics of its observation line with their acceptance. The runner
// produces the metric values, the verifier (checks/) recomputes them from
// the event logs, and both are judged against the entry here; the evidence
// package derives the boundary table and the proof-boundary matrix from the
// same entries, and the report renders them.
//
// It is a leaf: it imports nothing of this module, so that every other
// package (runner, checks, evidence, reports) may import it.
//
// Adding a scenario: add one entry to the topic file it belongs to (or a
// new topic file, with its slice in table), one runner function in the
// runs table of its runner/<topic>.go, and one verifier derivation in the
// derivations table of its checks/derive_<topic>.go (CONTRIBUTING.md);
// tests in those packages fail
// while one of the three is missing. Then `go generate ./spec` writes the
// files generated from the spec (docs/scenarios.md's tables, the README's
// example lines and count, the planted bugs' constants): see
// cmd/specgen.
package spec

//go:generate go run ./cmd/specgen

import (
	"github.com/orderflow-audit/orderflow-audit/internal/didyoumean"

	"fmt"
	"slices"
	"sort"
	"strings"
)

// Suites of scenarios, in run order.
const (
	SuiteU79 = "U79" // order placement (the base the outbox relies on)
	SuiteU80 = "U80" // the outbox/inbox chain and its three boundaries
	SuiteEXT = "EXT" // extensions beyond the reference lines
	// SuiteSweep: every call of the relay and the consumer fails once
	// (sweep.go); opt-in, run by --full.
	SuiteSweep = "SWEEP"
)

// Suites lists the suites in run order.
var Suites = []string{SuiteU79, SuiteU80, SuiteEXT, SuiteSweep}

// Boundaries: where in the chain a scenario injects its fault.
const (
	BoundaryNone   = "none"   // no fault: the chain as designed
	BoundaryCommit = "commit" // the order's local transaction
	BoundarySend   = "send"   // the relay between publish and mark
	BoundaryAck    = "ack"    // the consumer between effect and offset commit
)

// Metric is one name=value of a scenario's observation line.
type Metric struct {
	Name string
	// Accept is the value the scenario needs to pass; "" means the metric
	// is reported but does not decide the status.
	Accept string
	// Means says what the value counts or shows, for the runner (from the
	// database, the broker and what the actors returned) and the verifier
	// (from the event logs) alike, or "runner: ...; verifier: ..." where
	// they measure it apart. docs/scenarios.md prints it.
	Means string
	// Example is, for a metric without Accept, the value a clean run of
	// the reference shows; the README's example lines print it.
	Example string
	// Batch is, where it differs from Accept, the accepted value in the
	// scenario's batch variant (ConsumerMode): the batched consumer
	// settles and replays a poll's records together.
	Batch string
}

// Design is the row of the boundary table (docs/design.md) that a U80 boundary
// scenario stands for: what it injects, how the chain recovers, and when it
// is accepted.
type Design struct {
	Injection, Recovery, Accepted string
}

// Scenario is one named experiment on the system under test.
type Scenario struct {
	// ID is stable: it names the scenario in its observation line, the
	// evidence, the event-log paths and the report.
	ID       string
	Suite    string
	Boundary string
	// Faults are the faults the scenario injects, each a row of the fault
	// table (Faults).
	Faults []FaultRef
	// Description says what the scenario does, in one sentence: the
	// scenarios command and the evidence carry it.
	Description string
	// Details adds what the description leaves out (sizes, timeouts, the
	// order of steps), for docs/scenarios.md only.
	Details string
	// Also says in words what the scenario needs beyond its line (the
	// conditions its runner function and its derivation check outside the
	// metrics) and when the verifier finds its PASS inconclusive;
	// docs/scenarios.md prints it beside the accepted values.
	Also string
	// Design is set on the scenario that stands for its boundary in the
	// boundary table.
	Design *Design
	// Metrics are the observation line's metrics, in line order.
	Metrics []Metric
	// Needs are the features the system under test must claim for the
	// scenario to run (it does not run otherwise).
	Needs []Feature
	// OptIn keeps the scenario out of the default selection: it runs only
	// when --scenarios names it (a long or randomized experiment).
	OptIn bool
	// Consumes says the scenario runs the consumer: it runs in each
	// consumer mode the run selects (ConsumerMode, modes.go). The runner
	// refuses a consumer to a scenario without it.
	Consumes bool
}

// withDetails returns s with its Details.
func (s Scenario) withDetails(details string) Scenario {
	s.Details = details
	return s
}

// withAlso returns s with its Also.
func (s Scenario) withAlso(also string) Scenario {
	s.Also = also
	return s
}

// FaultPoints returns the points of the scenario's faults, in declaration
// order (what the evidence records as fault_points).
func (s Scenario) FaultPoints() []string {
	out := make([]string, len(s.Faults))
	for i, f := range s.Faults {
		out[i] = string(f.Point)
	}
	return out
}

// Accept returns the acceptance of metric name ("" when unconstrained or
// not a metric of s).
func (s Scenario) Accept(name string) string {
	for _, m := range s.Metrics {
		if m.Name == name {
			return m.Accept
		}
	}
	return ""
}

// MetricNames returns the metric names in line order.
func (s Scenario) MetricNames() []string {
	out := make([]string, len(s.Metrics))
	for i, m := range s.Metrics {
		out[i] = m.Name
	}
	return out
}

// AcceptText is the acceptance as "name=value ..." sorted by name.
func (s Scenario) AcceptText() string {
	var parts []string
	for _, m := range s.Metrics {
		if m.Accept != "" {
			parts = append(parts, m.Name+"="+m.Accept)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// RequiredFaults returns the points of the scenario's faults that every
// run of it must show fired, in declaration order: all but a nemesis's (a
// seeded schedule draws them, none is promised) and one whose fault needs
// a planted bug (NeedsPlant: without it the point cannot fire). The
// verifier fails a PASS whose events lack one (fault-not-injected).
func (s Scenario) RequiredFaults() []Point {
	var out []Point
	for _, r := range s.Faults {
		f, _ := LookupFault(r)
		if strings.HasPrefix(string(r.Point), NemesisPrefix) || f.NeedsPlant != "" || slices.Contains(out, r.Point) {
			continue
		}
		out = append(out, r.Point)
	}
	return out
}

// BrokerControlled tells whether the scenario injects a fault by telling
// the broker to fail a request (it then needs the embedded broker).
func (s Scenario) BrokerControlled() bool {
	return slices.ContainsFunc(s.Faults, func(f FaultRef) bool { return f.Injection == InjectBroker })
}

// Killed tells whether the scenario injects a fault by a signal to an
// actor's OS process.
func (s Scenario) Killed() bool {
	return slices.ContainsFunc(s.Faults, func(f FaultRef) bool { return f.Injection == InjectSignal })
}

// table is every scenario, topic file by topic file in the order of their
// names, each file's in declaration order. All sorts it into run order; a
// scenario that is in no topic's slice here is declared nowhere.
var table = slices.Concat(ackScenarios, chainScenarios, chaosScenarios, commitScenarios, consumerScenarios,
	leaseScenarios, placementScenarios, publishScenarios, sendScenarios, sweepScenarios, tokenScenarios)

// referenceOrder pins the run order of the reference lines (docs/design.md lists
// them in this order). A scenario not listed runs after the listed ones of
// its suite, in table order.
var referenceOrder = []string{
	"placement", "idempotentReplay", "keyReuseOtherBody", "concurrentDuplicates", "insufficientStock", "noOversell",
	"tokenMissing", "tokenBadSignature", "tokenExpired", "tokenWrongAlg",
	"txBoundaryRollback", "normalChain", "sendBeforeMarkCrash", "offsetReplay", "businessInvariants",
	"concurrentRelays", "orderCrashWindow", "relayKill9",
}

// All returns every scenario in run order: U79, U80, EXT.
func All() []Scenario {
	out := slices.Clone(table)
	rank := func(s Scenario) (int, int) {
		r := slices.Index(referenceOrder, s.ID)
		if r < 0 {
			r = len(referenceOrder)
		}
		return slices.Index(Suites, s.Suite), r
	}
	slices.SortStableFunc(out, func(a, b Scenario) int {
		sa, ra := rank(a)
		sb, rb := rank(b)
		if sa != sb {
			return sa - sb
		}
		return ra - rb
	})
	return out
}

// IDs returns every scenario id in run order.
func IDs() []string {
	all := All()
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.ID
	}
	return out
}

// Lookup returns the scenario with id.
func Lookup(id string) (Scenario, bool) {
	base, mode := BaseID(id)
	for _, s := range table {
		switch {
		case s.ID == id:
			return s, true
		case s.ID == base && mode == ModeBatch && s.Consumes:
			return s.batchVariant(), true
		}
	}
	return Scenario{}, false
}

// DefaultIDs returns the ids of the default selection (every scenario but
// the opt-in ones), in run order.
func DefaultIDs() []string {
	var out []string
	for _, s := range All() {
		if !s.OptIn {
			out = append(out, s.ID)
		}
	}
	return out
}

// Select returns the scenarios named in ids (the default selection, every
// scenario that is not OptIn, when ids is empty), in run order; a batch
// variant's id (BatchID) selects it right after its scenario's place. An
// unknown id is an error listing the valid ones.
func Select(ids []string) ([]Scenario, error) {
	all := All()
	if len(ids) == 0 {
		return slices.DeleteFunc(all, func(s Scenario) bool { return s.OptIn }), nil
	}
	var unknown []string
	for _, id := range ids {
		if _, ok := Lookup(id); !ok && !slices.Contains(unknown, id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		hint := ""
		if len(unknown) == 1 {
			hint = didyoumean.Hint(unknown[0], IDs())
		}
		return nil, fmt.Errorf("unknown scenario %s%s (valid: %s)", strings.Join(unknown, ", "), hint, strings.Join(IDs(), ", "))
	}
	var out []Scenario
	for _, s := range all {
		if slices.Contains(ids, s.ID) {
			out = append(out, s)
		}
		if s.Consumes && slices.Contains(ids, BatchID(s.ID)) {
			out = append(out, s.batchVariant())
		}
	}
	return out, nil
}

// Boundaries returns the boundary table's scenarios: the U80 scenarios with
// a Design, in run order (commit, send, ack).
func Boundaries() []Scenario {
	var out []Scenario
	for _, s := range All() {
		if s.Suite == SuiteU80 && s.Design != nil {
			out = append(out, s)
		}
	}
	return out
}
