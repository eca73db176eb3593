package checks

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The verifier's derivations: for each scenario of the spec, its metrics
// recomputed from the replay as docs/scenarios.md defines them (the
// derive_*.go files, by topic). The acceptance is the spec's. A scenario id
// the spec does not know is checked for integrity, replay rules and
// invariants, but its metrics are inconclusive.

// metricValue is one recomputed metric; ok is false when the events do
// not determine it (why says what is missing).
type metricValue struct {
	name, value string
	ok          bool
	why         string
}

func num(name string, n int64) metricValue {
	return metricValue{name: name, value: strconv.FormatInt(n, 10), ok: true}
}
func text(name, s string) metricValue      { return metricValue{name: name, value: s, ok: true} }
func flag(name string, b bool) metricValue { return text(name, strconv.FormatBool(b)) }
func unknown(name, why string) metricValue { return metricValue{name: name, why: why} }

// facts is what metrics are computed from: the model and the invariant
// results on the replayed state (nil when SQL could not run).
type facts struct {
	m   *Model
	inv map[string]int64
	// inboxes are the inbox consumers the run's selection declares (the
	// chaos scenario's --inboxes, spec.ChaosInboxes); nil when it declares
	// none.
	inboxes []string
}

// derivation recomputes one scenario's metrics.
type derivation struct {
	metrics func(f facts) []metricValue
	// injected says why the events do not show the scenario's fault
	// injection ("" when they do), for a fault the events show otherwise
	// than by a fault event at its point; nil takes the spec's faults
	// (injection). Without it a boundary scenario's acceptance would hold
	// vacuously.
	injected func(f facts) string
	// exercised says why the events do not show the situation the
	// scenario exists to provoke ("" when they do), such as two relays
	// holding live claims at once; nil when there is none beyond its
	// faults. A PASS without it is inconclusive: nothing went wrong, and
	// nothing was shown either.
	exercised func(f facts) string
	// conditions are what the scenario needs beyond its metrics, the
	// conditions the runner checks outside its line (Result.Failf in
	// runner/): each one the events show failed, in words. A PASS with
	// one failed is a status-mismatch, so that no status rests on the
	// runner's word. nil when the line's metrics say everything.
	conditions func(f facts) []string
}

// derivations binds every scenario id of the spec to its derivation, which
// computes the scenario's metrics from the replay as its spec entry's
// meanings (spec.Metric.Means) define them. Each derive_<topic>.go file holds the table of its own scenarios
// (ackDerivations, ...); derivations joins those tables, and an id in two
// of them panics at start. TestEveryScenarioDerived holds derivations and
// the spec to each other.
var derivations = joinDerivations(placementDerivations, tokenDerivations, businessDerivations, commitDerivations,
	chainDerivations, sendDerivations, ackDerivations, chaosDerivations, consumerDerivations, leaseDerivations,
	publishDerivations, sweepDerivations)

// joinDerivations joins the topic files' tables.
func joinDerivations(tables ...map[string]derivation) map[string]derivation {
	out := map[string]derivation{}
	for _, t := range tables {
		for id, d := range t {
			if _, dup := out[id]; dup {
				panic("checks: scenario " + id + " is in two derivation tables")
			}
			out[id] = d
		}
	}
	return out
}

// injection returns what decides whether the events show scenario s's
// fault injection: d.injected when the derivation has its own, otherwise
// a fault event at each point the spec requires of every run of s
// (spec.Scenario.RequiredFaults).
func (d derivation) injection(s spec.Scenario) func(f facts) string {
	if d.injected != nil {
		return d.injected
	}
	return faultHit(s.RequiredFaults()...)
}

// faultHit requires a fault event at each of points.
func faultHit(points ...spec.Point) func(f facts) string {
	return func(f facts) string {
		for _, p := range points {
			if !slices.Contains(f.m.Faults(), string(p)) {
				return "no fault event at " + string(p)
			}
		}
		return ""
	}
}

// perIntent computes a metric of the scenario's intent e.
func (f facts) perIntent(name string, fn func(e string) metricValue) metricValue {
	e := f.m.KeyIntent()
	if e == "" {
		return unknown(name, "the scenario has no intent (no order_committed, outbox_written or seeded intent)")
	}
	return fn(e)
}

// deliveries: how many distinct records of the scenario's intent were
// received.
func (f facts) deliveries(name string) metricValue {
	return f.perIntent(name, func(e string) metricValue { return num(name, f.m.Deliveries(e).Received) })
}

// effects: how many effects the scenario's intent had.
func (f facts) effects(name string) metricValue {
	return f.perIntent(name, func(e string) metricValue { return num(name, f.m.Deliveries(e).Effects) })
}

// rowState: the final outbox state of the scenario's intent.
func (f facts) rowState(name string) metricValue {
	return f.perIntent(name, func(e string) metricValue {
		if in, ok := f.m.Intent(e); ok {
			return text(name, in.State)
		}
		return unknown(name, "no outbox row "+e)
	})
}

func (f facts) invariant(name, id string) metricValue {
	if f.inv == nil {
		return unknown(name, "the invariants could not run on the replayed state")
	}
	n, ok := f.inv[id]
	if !ok {
		return unknown(name, "no invariant "+id)
	}
	return num(name, n)
}

func (f facts) countOrders() (orders, lines, idem int64) {
	for o := range f.m.Orders() {
		if o.Row {
			orders++
		}
		if o.Lines {
			lines += int64(len(o.OrderLines()))
		}
		if o.Idem {
			idem++
		}
	}
	return
}

func (f facts) sent() (sent, linked int64) {
	for in := range f.m.Intents() {
		if in.State == evidence.StateSent {
			sent++
			if o, ok := f.m.Order(in.AggregateID); ok && o.Row {
				linked++
			}
		}
	}
	return
}

func (f facts) stockSum() int64 {
	var n int64
	for _, q := range f.m.Stock() {
		n += q
	}
	return n
}

// seededStock is the stock of the scenario's (first) seeded SKU at the end.
func (f facts) seededStock(name string) metricValue {
	skus := f.m.SeededSKUs()
	if len(skus) == 0 {
		return unknown(name, "no seed_stock event")
	}
	return num(name, f.m.StockOf(skus[0]))
}

// requestStatus is the HTTP status of the i-th answer: as the client
// recorded it (order_request), or, in logs without the client's records,
// as the order service logged it.
func (f facts) requestStatus(name string, i int) metricValue {
	if cl := f.m.ClientRequests(); len(cl) > 0 {
		if i >= len(cl) {
			return unknown(name, "the client recorded "+strconv.Itoa(len(cl))+" request(s)")
		}
		return num(name, cl[i].Status)
	}
	reqs := f.m.Requests()
	if i >= len(reqs) {
		return unknown(name, "the order service recorded "+strconv.Itoa(len(reqs))+" answer(s)")
	}
	return num(name, reqs[i].Status)
}

// seedUntouched: every decoy (aggregate_id -1) was observed after the
// rollback with its seeded state, claim_version, aggregate id and payload
// sha256, and no claim, publish, mark or lease_expired named it.
func (f facts) seedUntouched() bool {
	decoys := 0
	for in := range f.m.Intents() {
		if !in.Decoy || in.Seeded == nil {
			continue
		}
		decoys++
		obs := in.LastObserved
		s := in.Seeded
		if in.Touched || obs == nil || obs.State != s.State || obs.ClaimVersion != s.ClaimVersion ||
			(obs.OrderID != nil && *obs.OrderID != *s.OrderID) ||
			(obs.PayloadSHA256 != "" && obs.PayloadSHA256 != s.PayloadSHA256) ||
			in.State != s.State || in.ClaimVersion != s.ClaimVersion {
			return false
		}
	}
	return decoys > 0
}

// answerCount is how many requests were answered: as the client recorded
// them (order_request), or, in logs without the client's records, as the
// order service logged them; answeredWith and answerStatuses read the
// same, okOrders counts the distinct orders their 2xx answers named.
func (f facts) answerCount() int64 {
	if n := f.m.Counts(); n.ClientRequests > 0 {
		return n.ClientRequests
	}
	return f.m.Counts().Requests
}

func (f facts) answeredWith(status int64) int64 {
	if f.m.Counts().ClientRequests > 0 {
		return f.m.ClientAnsweredWith(status)
	}
	return f.m.AnsweredWith(status)
}

func (f facts) answerStatuses() []int64 {
	if f.m.Counts().ClientRequests > 0 {
		return f.m.ClientStatuses()
	}
	return f.m.Statuses()
}

func (f facts) okOrders() int64 {
	if n := f.m.Counts(); n.ClientRequests > 0 {
		return n.ClientOKOrders
	}
	return f.m.Counts().OKOrders
}

// onlyStatuses is the condition that every answer had one of want.
func onlyStatuses(want ...int64) func(f facts) []string {
	return func(f facts) []string {
		var out []string
		for _, st := range f.answerStatuses() {
			if !slices.Contains(want, st) {
				out = append(out, fmt.Sprintf("%d request(s) answered %d, not one of %v", f.answeredWith(st), st, want))
			}
		}
		return out
	}
}

// accepted tells whether recomputed metrics meet the acceptance. ok is
// false when that cannot be decided: no known metric fails and a
// constrained one is unknown.
func accepted(s spec.Scenario, ms []metricValue) (pass, ok bool) {
	undecided := false
	for _, m := range ms {
		want := s.Accept(m.name)
		if want == "" {
			continue // unconstrained
		}
		if !m.ok {
			undecided = true
		} else if m.value != want {
			return false, true
		}
	}
	return !undecided, !undecided
}
