package checks

import (
	"context"
	"fmt"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// scenarioCheck holds one scenario's logged events against the witnesses
// (step 4). Each check consumes the row changes and records it explains,
// so that what is left at the end is what no event explains.
type scenarioCheck struct {
	sc     *evidence.Scenario
	runID  string
	events []wEvent
	db     *scenarioDB // nil: no database witness
	log    *broker.Log // nil: no broker witness
	// cut is set when a log of the scenario was cut: an unexplained write
	// or record may then be the lost event's, so it is inconclusive.
	cut     bool
	reasons []Reason
	sum     witnessSummary
	// records are the broker records an event explained.
	records map[recordKey]bool
	// payloads are the outbox intents' payloads, by event id, as the
	// binlog shows them: what a published record's value must be.
	payloads map[string]string
}

type recordKey struct {
	topic     string
	partition int32
	offset    int64
}

func (s *scenarioCheck) add(r Reason) { s.reasons = append(s.reasons, r) }

// unexplained adds a finding about a write or record no event explains:
// inconclusive when a log was cut.
func (s *scenarioCheck) unexplained(r Reason) {
	if s.cut {
		r.Status = Inconclusive
		r.Message += " (a log of this scenario was cut: the lost event may explain it)"
	}
	s.add(r)
}

// kinds returns the events of the given kinds, in replay order.
func (s *scenarioCheck) kinds(ks ...evidence.Kind) []wEvent {
	var out []wEvent
	for _, w := range s.events {
		for _, k := range ks {
			if w.e.Kind == k {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// run does every cross-check the scenario's witnesses allow.
func (s *scenarioCheck) run() {
	if s.db != nil {
		s.payloads = intentPayloads(s.db)
		s.seeds()
		s.orders()
		s.advances()
		s.answers()
		s.rollbacks()
		s.claims()
		s.marks()
		s.leases()
		s.effects()
		s.unknownCommits()
		s.rejects()
		s.unloggedWrites()
	}
	if s.log != nil {
		s.records = map[recordKey]bool{}
		s.publishes()
		s.unknownPublishes()
		s.diedHolding()
		s.receives()
		s.unloggedRecords()
		s.offsets()
	}
}

// witnessScenario runs the cross-checks and the end-state checks of one
// scenario and records what the witnesses confirmed for the report.
func (c *checker) witnessScenario(ctx context.Context, sc *evidence.Scenario, events []wEvent, cut bool) {
	ws := c.wit
	if ws == nil || (ws.db == nil && ws.broker == nil) || (sc.Status == evidence.StatusNotRun && len(sc.Logs) == 0) {
		return
	}
	s := &scenarioCheck{sc: sc, runID: c.ev.Run.ID, events: events, cut: cut, log: ws.broker}
	if ws.db != nil {
		schema := evidence.ScratchName(c.ev.Run.ID, sc.ID)
		if txs, ok := ws.db.bySchema[schema]; ok {
			s.db = newScenarioDB(schema, txs)
		}
	}
	if s.db == nil && s.log == nil {
		return
	}
	s.run()
	run := &scenarioRun{c: c, id: sc.ID, counts: map[[2]string]int{}, overCap: map[[2]string]int{}}
	for _, r := range s.reasons {
		run.logReason(r)
	}
	run.flush()
	if s.db != nil {
		c.witnessState(ctx, sc, s.db)
	}
	c.v.Witnessed = append(c.v.Witnessed, WitnessedScenario{Scenario: sc.ID, Summary: s.sum.line(s)})
}

// confirmed joins what a scenario's witnesses confirmed into one line.
func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// plural formats "1 record" / "2 records".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
