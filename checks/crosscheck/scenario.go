package crosscheck

import (
	"fmt"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// scenarioCheck holds one scenario's logged events against the witnesses
// (step 4). Each check consumes the row changes and records it explains,
// so that what is left at the end is what no event explains.
type scenarioCheck struct {
	sc     *evidence.Scenario
	runID  string
	events []Event
	db     *scenarioDB // nil: no database witness
	log    *broker.Log // nil: no broker witness
	// cut is set when a log of the scenario was cut: an unexplained write
	// or record may then be the lost event's, so it is inconclusive.
	cut     bool
	reasons []finding.Reason
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

func (s *scenarioCheck) add(r finding.Reason) { s.reasons = append(s.reasons, r) }

// unexplained adds a finding about a write or record no event explains:
// inconclusive when a log was cut.
func (s *scenarioCheck) unexplained(r finding.Reason) {
	if s.cut {
		r.Status = finding.Inconclusive
		r.Message += " (a log of this scenario was cut: the lost event may explain it)"
	}
	s.add(r)
}

// kinds returns the events of the given kinds, in replay order.
func (s *scenarioCheck) kinds(ks ...evidence.Kind) []Event {
	var out []Event
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
		s.marker()
		s.seeds()
		s.orders()
		s.advances()
		s.answers()
		s.rollbacks()
		s.claims()
		s.marks()
		s.leases()
		s.claimWaits()
		s.effects()
		s.unknownCommits()
		s.rejects()
		s.unloggedWrites()
		s.columns()
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

// Result is what the cross-checks of one scenario found.
type Result struct {
	// Reasons are the findings in the order found, each located at its
	// event (Log, Seq, Line) or in the witness (Witness); their Scenario
	// is left for the caller to set.
	Reasons []finding.Reason
	// Summary says in one line what the witnesses confirmed of the
	// scenario's claims, a clause per boundary.
	Summary string
	// db is the scenario's database as the binlog shows it (nil when the
	// database is not witnessed).
	db *scenarioDB
}

// Check runs the cross-checks of scenario sc of run runID (step 4): each
// of events, which the replay kept (Keep), against the history the
// witnesses hold. cut says that a log of the scenario was cut, so that a
// write or record no event explains may be the lost event's (such a
// finding is then inconclusive). It returns nil when the witnesses hold
// nothing of the scenario (none was read, or it did not run and recorded
// nothing, or neither its database nor the broker is witnessed).
func (w *Witnesses) Check(runID string, sc *evidence.Scenario, events []Event, cut bool) *Result {
	if !w.HasDatabase() && !w.HasBroker() || (sc.Status == evidence.StatusNotRun && len(sc.Logs) == 0) {
		return nil
	}
	s := &scenarioCheck{sc: sc, runID: runID, events: events, cut: cut, log: w.broker}
	if w.db != nil {
		schema := evidence.ScratchName(runID, sc.ID)
		if txs, ok := w.db.bySchema[schema]; ok {
			s.db = newScenarioDB(schema, txs)
		}
	}
	if s.db == nil && s.log == nil {
		return nil
	}
	s.run()
	return &Result{Reasons: s.reasons, Summary: s.sum.line(s), db: s.db}
}

// joinNonEmpty joins what a scenario's witnesses confirmed into one line.
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
