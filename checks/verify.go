package checks

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/crosscheck"
	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/invariants"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Options configure Verify.
type Options struct {
	// MySQLDSN, when set, loads each scenario's replayed end state into a
	// scratch database ofa_verify_<random> on that MySQL/MariaDB server,
	// dropped afterwards. Empty (the default): an embedded, in-memory
	// SQLite engine, so that verifying needs no server.
	MySQLDSN string
	// Now stamps the verdict. Default: time.Now.
	Now func() time.Time
	// Workers is how many goroutines decode event lines. Default:
	// runtime.GOMAXPROCS(0).
	Workers int
	// AllowUnwitnessed lets evidence without a witness (or with one
	// listed as missing) pass: the verdict then lists what is unwitnessed
	// instead of being at best INCONCLUSIVE.
	AllowUnwitnessed bool
	// BlackBox also runs the witness-only layer (checks/blackbox) over
	// the same witnesses, under profiles/reference.yaml, and records its
	// verdict in Verdict.BlackBox; the verdict becomes the layer's when
	// that is worse (blackboxlayer.go). Default: off (verify and report
	// turn it on).
	BlackBox bool
	// BlackBoxProfile, when set, is the profile text the layer runs
	// under instead of profiles/reference.yaml.
	BlackBoxProfile []byte
}

func (o *Options) setDefaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
}

// Verify re-derives every claim of the evidence file at path from its
// event logs and returns the verdict with every reason. It returns an error
// only when it could not check at all: the file is not evidence (the error
// wraps evidence.ErrBadInput), the MySQL server of Options.MySQLDSN is
// unavailable (wraps ErrUnavailable), or ctx ended.
func Verify(ctx context.Context, path string, opt Options) (*Verdict, error) {
	opt.setDefaults()
	// Every read of the bundle goes through its gate: the evidence file
	// here, the logs and the witness files below (evidence/bundle).
	b, err := bundle.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", evidence.ErrBadInput, err)
	}
	defer b.Close()
	ev, err := evidence.Parse(b.Evidence())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	invs, err := invariants.All()
	if err != nil {
		return nil, err
	}
	var eng *engine
	if opt.MySQLDSN != "" {
		eng, err = openMySQL(ctx, opt.MySQLDSN, ev.Run.ID)
	} else {
		eng, err = openSQLite(ctx)
	}
	if err != nil {
		return nil, err
	}
	pool := newDecoderPool(opt.Workers)
	defer pool.Close()
	// The witnesses are read beside the evidence-level checks: serving the
	// broker's directory to read it takes a tenth of a second.
	type witnessRead struct {
		ws      *crosscheck.Witnesses
		reasons []Reason
		missing []string
	}
	wch := make(chan witnessRead, 1)
	go func() {
		ws, rs := readWitnesses(ctx, ev, b)
		wch <- witnessRead{ws, rs, crosscheck.Missing(ev)}
	}()

	v := &Verdict{
		Evidence: path, RunID: ev.Run.ID, Engine: eng.name, Scenarios: len(ev.Scenarios),
		Planted: ev.Run.Planted, CheckedAt: opt.Now().UTC(), Reasons: []Reason{}, Invariants: []InvariantCheck{},
	}
	c := &checker{
		v: v, ev: ev, b: b, invs: invs, eng: eng, pool: pool,
		logOwners: map[string]string{}, seen: map[string]bool{},
	}
	c.evidenceLevel()
	wr := <-wch
	c.witnessed(wr.ws, wr.reasons, wr.missing, opt.AllowUnwitnessed)
	for i := range ev.Scenarios {
		if err := c.scenario(ctx, &ev.Scenarios[i]); err != nil {
			_ = eng.close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("verify %s: %w", path, err)
		}
	}
	c.proofBoundary() // proof.go
	c.negativeControl()
	if err := eng.close(context.WithoutCancel(ctx)); err != nil {
		v.Warnings = append(v.Warnings, "closing the SQL engine: "+err.Error())
	}
	v.Status = Pass
	for _, r := range v.Reasons {
		if r.Status == Fail {
			v.Status = Fail
			break
		}
		v.Status = Inconclusive
	}
	if opt.BlackBox {
		c.blackBoxLayer(wr.ws, opt.BlackBoxProfile) // blackboxlayer.go
	}
	return v, nil
}

type checker struct {
	v  *Verdict
	ev *evidence.Evidence
	// b is the bundle's gate: every file of the bundle is read through it.
	b         *bundle.Bundle
	invs      []invariants.Invariant
	eng       *engine
	pool      *evidence.Pool
	logOwners map[string]string // a log's file (bundle.File.ID) -> scenario
	seen      map[string]bool   // scenario ids
	// selected is run.selection: what the run was asked to do (nil when
	// the evidence does not record it; see selection).
	selected *evidence.Selection
	// layers are the layers of rules that apply to the system under test.
	layers []spec.Layer
	// truncated is set while checking a scenario one of whose logs was
	// cut: end-state comparisons may then be explained by the lost tail,
	// so they are inconclusive instead of failures.
	truncated bool
	// wit is what the witnesses hold (witnessed.go); wevents collects,
	// while a scenario replays, the events the witnesses are held against.
	wit     *crosscheck.Witnesses
	collect bool
	wevents []crosscheck.Event
	// proof holds, per scenario, what its events show of its faults
	// (proof.go).
	proof map[string]scenarioProof
}

// endState adds a finding about the replayed end state or a recomputed
// claim: a failure, or inconclusive when a log of the scenario was cut.
func (c *checker) endState(r Reason) {
	if c.truncated && r.Status == Fail {
		r.Status = Inconclusive
		r.Message += " (a log of this scenario was cut: the lost events may explain it)"
	}
	c.add(r)
}

func (c *checker) add(r Reason) { c.v.Reasons = append(c.v.Reasons, r) }

func (c *checker) fail(scenario, rule, format string, args ...any) {
	c.add(Reason{Rule: rule, Status: Fail, Scenario: scenario, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) inconclusive(scenario, rule, format string, args ...any) {
	c.add(Reason{Rule: rule, Status: Inconclusive, Scenario: scenario, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) mismatch(scenario, rule, field, claimed, recomputed, format string, args ...any) {
	c.add(Reason{Rule: rule, Status: Fail, Scenario: scenario, Field: field, Claimed: claimed, Recomputed: recomputed,
		Message: fmt.Sprintf(format, args...)})
}

// timeTolerance is how far an event's time may lie outside [run.start,
// run.end]: the runner stamps the run and each actor stamps its events
// with its own reading of the clock (actors may be other processes), so
// the two need not agree to the nanosecond.
const timeTolerance = 2 * time.Second

func runWindow(r evidence.Run) string {
	return fmt.Sprintf("%s to %s, ±%s", r.Start.Format(time.RFC3339Nano), r.End.Format(time.RFC3339Nano), timeTolerance)
}

// maxPerLogRule bounds the reasons of one rule for one log; the rest are
// counted in one closing reason.
const maxPerLogRule = 10

// scenarioRun collects one scenario's per-log findings with their caps.
type scenarioRun struct {
	c       *checker
	id      string
	counts  map[[2]string]int
	overCap map[[2]string]int
	order   [][2]string
}

func (s *scenarioRun) logReason(r Reason) {
	k := [2]string{r.Rule, r.Log}
	if s.counts[k] >= maxPerLogRule {
		if s.overCap[k] == 0 {
			s.order = append(s.order, k)
		}
		s.overCap[k]++
		return
	}
	s.counts[k]++
	r.Scenario = s.id
	s.c.add(r)
}

func (s *scenarioRun) flush() {
	for _, k := range s.order {
		n := s.overCap[k]
		st := Fail
		if k[0] == "log-truncated" {
			st = Inconclusive
		}
		s.c.add(Reason{Rule: k[0], Status: st, Scenario: s.id, Log: k[1],
			Message: fmt.Sprintf("%d more %s finding(s) in this log, not listed", n, k[0])})
	}
}

func (c *checker) scenario(ctx context.Context, sc *evidence.Scenario) error {
	id := sc.ID
	if c.seen[id] {
		c.fail(id, "scenario-duplicate", "scenario %s is listed twice", id)
	}
	c.seen[id] = true
	s, known := spec.Lookup(id)
	d, derived := derivations[s.Base()] // a batch variant is derived as its scenario
	known = known && derived
	if known {
		c.sameAsSpec(sc, s)
	}
	if want := evidence.FormatLine(sc.Suite, sc.ID, sc.Status, sc.Metrics); sc.Line != want {
		c.mismatch(id, "line-mismatch", "line", sc.Line, want, "the observation line does not say what the scenario's status and metrics say")
	}
	if sc.Status == evidence.StatusNotRun {
		c.inconclusive(id, "scenario-not-run", "scenario %s did not run (%s): nothing about it can be concluded", id,
			orDefault(sc.Reason, "no reason given"))
		if len(sc.Logs) == 0 && len(sc.Metrics) == 0 && len(sc.Invariants) == 0 && len(sc.Tables) == 0 {
			return nil
		}
	}
	if !known {
		c.inconclusive(id, "scenario-unknown", "the verifier does not know scenario %s: its metrics and status cannot be recomputed "+
			"(its logs, replay rules, invariants and table digests are still checked)", id)
	}

	m := model.New(c.layers, sc.FaultPoints) // the layers the system under test claims (systemUnderTest)
	run := &scenarioRun{c: c, id: id, counts: map[[2]string]int{}, overCap: map[[2]string]int{}}
	c.collect, c.wevents = c.wit.HasDatabase() || c.wit.HasBroker(), nil
	truncated, err := c.replay(ctx, sc, m, run)
	events := c.wevents
	c.collect, c.wevents = false, nil
	if err != nil {
		return err
	}
	m.Finish(truncated)
	c.proofFacts(sc, m) // proof.go
	m.Release()
	c.truncated = truncated
	defer func() { c.truncated = false }()
	c.v.Events += m.Events()
	vs, more := m.Violations()
	for _, x := range vs {
		c.add(Reason{Rule: string(x.Rule), Status: violationStatus(x), Scenario: id, Log: x.Source.Log, Seq: x.Source.Seq,
			Line: x.Source.Line, Message: x.Message})
	}
	for _, rule := range sortedKeys(more) {
		c.fail(id, string(rule), "%d more %s violation(s), not listed", more[rule], rule)
	}
	run.flush()

	c.liveInvariantEvents(sc, m, truncated)
	inv := c.sqlChecks(ctx, sc, m)
	c.witnessScenario(ctx, sc, events, truncated)
	if known {
		c.metrics(sc, s, d, facts{m: m, inv: inv, inboxes: c.declaredInboxes()})
	}
	if sc.Status == evidence.StatusFail {
		c.fail(id, "scenario-failed", "the runner reports scenario %s failed: %s", id, orDefault(sc.Reason, "no reason given"))
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// metrics recomputes a known scenario's metrics, status and line and
// compares them with the claims.
func (c *checker) metrics(sc *evidence.Scenario, s spec.Scenario, d derivation, f facts) {
	id := sc.ID
	rec := d.metrics(f)
	byName := map[string]metricValue{}
	var names []string
	for _, r := range rec {
		byName[r.name] = r
		names = append(names, r.name)
	}
	var claimedNames []string
	for _, cm := range sc.Metrics {
		claimedNames = append(claimedNames, cm.Name)
		r, ok := byName[cm.Name]
		switch {
		case !ok:
			c.mismatch(id, "metric-mismatch", cm.Name, cm.Value, "",
				"scenario %s has no metric %s (its metrics are %s)", id, cm.Name, strings.Join(names, ", "))
		case !r.ok:
			// A claim no event supports is a defect; with a cut log the
			// supporting event may be the one lost.
			c.endState(Reason{Rule: "metric-not-recomputable", Status: Fail, Scenario: id, Field: cm.Name, Claimed: cm.Value,
				Message: fmt.Sprintf("%s=%s cannot be recomputed from the events: %s", cm.Name, cm.Value, r.why)})
		case r.value != cm.Value:
			c.endState(Reason{Rule: "metric-mismatch", Status: Fail, Scenario: id, Field: cm.Name, Claimed: cm.Value,
				Recomputed: r.value, Message: fmt.Sprintf("%s: the evidence claims %s, the events give %s", cm.Name, cm.Value, r.value)})
		}
	}
	if sc.Status == evidence.StatusNotRun {
		return
	}
	if !slices.Equal(claimedNames, names) {
		missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(claimedNames, n) })
		switch {
		case len(missing) > 0 && sc.Status == evidence.StatusPass:
			c.mismatch(id, "metric-mismatch", strings.Join(missing, ","), "", strings.Join(names, " "),
				"a passing scenario must claim every metric: %s missing", strings.Join(missing, ", "))
		case len(missing) == 0 || sc.Status == evidence.StatusPass:
			c.mismatch(id, "metric-mismatch", "(order)", strings.Join(claimedNames, " "), strings.Join(names, " "),
				"the metrics are not in line order")
		}
	}
	if sc.Status == evidence.StatusPass {
		if why := d.injection(s)(f); why != "" {
			c.endState(Reason{Rule: "fault-not-injected", Status: Fail, Scenario: id,
				Message: "the scenario claims PASS at the " + s.Boundary + " boundary, but the events do not show its fault injection: " + why})
		}
	}
	if d.exercised != nil && sc.Status == evidence.StatusPass {
		if why := d.exercised(f); why != "" {
			c.add(Reason{Rule: "scenario-not-exercised", Status: Inconclusive, Scenario: id,
				Message: "the scenario claims PASS, but its events do not show what it exists to provoke: " + why})
		}
	}
	c.status(sc, s, d, f, rec)
}

// status recomputes a known scenario's status from its recomputed metrics
// rec and the conditions it needs beyond them, and compares it, and the
// line it gives, with the claims.
func (c *checker) status(sc *evidence.Scenario, s spec.Scenario, d derivation, f facts, rec []metricValue) {
	id := sc.ID
	pass, decided := accepted(s, rec)
	var failed []string
	if d.conditions != nil {
		failed = d.conditions(f)
	}
	recStatus := evidence.StatusFail
	if pass && len(failed) == 0 {
		recStatus = evidence.StatusPass
	}
	switch {
	case sc.Status == evidence.StatusPass && len(failed) > 0:
		c.endState(Reason{Rule: "status-mismatch", Status: Fail, Scenario: id, Field: "status", Claimed: sc.Status,
			Recomputed: evidence.StatusFail, Message: "the scenario claims PASS, but its events show a condition it needs failed: " +
				strings.Join(failed, "; ")})
	case sc.Status == evidence.StatusPass && !decided:
		c.endState(Reason{Rule: "status-not-recomputable", Status: Fail, Scenario: id, Field: "status", Claimed: sc.Status,
			Message: "PASS cannot be confirmed: a metric its acceptance needs cannot be recomputed from the events"})
	case sc.Status == evidence.StatusPass && !pass:
		c.endState(Reason{Rule: "status-mismatch", Status: Fail, Scenario: id, Field: "status", Claimed: sc.Status,
			Recomputed: recStatus, Message: fmt.Sprintf("the scenario claims PASS, but the recomputed metrics do not meet its acceptance (%s)",
				s.AcceptText())})
	}
	allKnown := true
	ms := make([]evidence.Metric, len(rec))
	for i, r := range rec {
		allKnown = allKnown && r.ok
		ms[i] = evidence.Metric{Name: r.name, Value: r.value}
	}
	if allKnown && decided && sc.Status != evidence.StatusFail {
		if want := evidence.FormatLine(s.Suite, id, recStatus, ms); want != sc.Line {
			c.endState(Reason{Rule: "line-mismatch", Status: Fail, Scenario: id, Field: "line", Claimed: sc.Line,
				Recomputed: want, Message: "the observation line the events support differs"})
		}
	}
}

// sameAsSpec checks what the evidence says a known scenario is against the
// spec: its suite, boundary, fault points and consumer mode.
func (c *checker) sameAsSpec(sc *evidence.Scenario, s spec.Scenario) {
	id := sc.ID
	if s.Suite != sc.Suite {
		c.mismatch(id, "scenario-mismatch", "suite", sc.Suite, s.Suite, "scenario %s belongs to suite %s", id, s.Suite)
	}
	if s.Boundary != sc.Boundary {
		c.mismatch(id, "scenario-mismatch", "boundary", sc.Boundary, s.Boundary, "scenario %s is at boundary %s", id, s.Boundary)
	}
	if want := s.FaultPoints(); !equalStrings(sc.FaultPoints, want) {
		c.mismatch(id, "scenario-mismatch", "fault_points", strings.Join(sc.FaultPoints, ","), strings.Join(want, ","),
			"scenario %s injects faults at %s", id, orDefault(strings.Join(want, ", "), "no point"))
	}
	// Evidence of versions before the mode was recorded ran the per-record
	// consumer and does not say so.
	if want := string(s.Mode()); sc.ConsumerMode != want && (sc.ConsumerMode != "" || want != string(spec.ModeRecord)) {
		c.mismatch(id, "scenario-mismatch", "consumer_mode", sc.ConsumerMode, want,
			"scenario %s runs %s", id, orDefault(want+" consumer", "no consumer"))
	}
}
