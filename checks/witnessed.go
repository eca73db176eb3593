package checks

import (
	"context"
	"fmt"
	"strconv"

	"github.com/orderflow-audit/orderflow-audit/checks/crosscheck"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The verifier's side of the witness step (step 5), which package
// crosscheck does: Verify reads the witnesses (readWitnesses) beside its
// evidence-level checks and takes in what they found (witnessed); each
// scenario's replay keeps the events a witness can speak to
// (crosscheck.Keep, in foldEvents), and witnessScenario has them
// cross-checked, adds the findings under the per-log caps, and holds the
// end state rebuilt from the binlog against the live digests and the
// invariants in the verifier's SQL engine (witnessState).

// WitnessedScenario says in one line what the witnesses confirmed of a
// scenario's claims (the report shows it per scenario).
type WitnessedScenario struct {
	Scenario string `json:"scenario"`
	Summary  string `json:"summary"`
}

// readWitnesses is crosscheck.Read; a variable so that tests of the
// cross-checks, which edit logs only, can read a fixture's witnesses once.
var readWitnesses = crosscheck.Read

// witnessed takes in what crosscheck.Read found: its reasons, and what
// is missing. Evidence without witnesses is at best inconclusive, unless
// the caller allows it (verify --allow-unwitnessed): the verdict then
// lists what is unwitnessed. (Evidence written before witnesses existed,
// schema v1, is refused before this by evidence.Parse.)
func (c *checker) witnessed(ws *crosscheck.Witnesses, reasons []Reason, missing []string, allow bool) {
	c.wit = ws
	for _, r := range reasons {
		c.add(r)
	}
	if allow {
		c.v.Unwitnessed = missing
		return
	}
	for _, m := range missing {
		c.add(Reason{Rule: "witness-missing", Status: Inconclusive, Message: "not witnessed: " + m +
			"; what the actors say about it cannot be held against the systems' own record " +
			"(verify --allow-unwitnessed accepts that and says so)"})
	}
}

// witnessScenario runs the cross-checks and the end-state checks of one
// scenario and records what the witnesses confirmed for the report.
func (c *checker) witnessScenario(ctx context.Context, sc *evidence.Scenario, events []crosscheck.Event, cut bool) {
	res := c.wit.Check(c.ev.Run.ID, sc, events, cut)
	if res == nil {
		return
	}
	run := &scenarioRun{c: c, id: sc.ID, counts: map[[2]string]int{}, overCap: map[[2]string]int{}}
	for _, r := range res.Reasons {
		run.logReason(r)
	}
	run.flush()
	if tables, problem, ok := res.EndState(); ok {
		c.witnessState(ctx, sc, tables, problem)
	}
	c.v.Witnessed = append(c.v.Witnessed, WitnessedScenario{Scenario: sc.ID, Summary: res.Summary})
}

// witnessState holds the scenario's end state rebuilt from its binlog
// (tables, or the problem that kept it from being rebuilt) against the
// live digests and the invariants.
func (c *checker) witnessState(ctx context.Context, sc *evidence.Scenario, tables []crosscheck.Table, problem string) {
	id := sc.ID
	if problem != "" {
		c.fail(id, "witness-state", "the end state cannot be rebuilt from the binlog: %s", problem)
		return
	}
	srcs := make([]tableSource, len(tables))
	live := map[string]evidence.TableDigest{}
	for _, t := range sc.Tables {
		live[t.Table] = t
	}
	for i, t := range tables {
		srcs[i] = TableRows(t).source()
		d := digestSource(srcs[i])
		if l, ok := live[t.Table]; ok && (l.Rows != d.Rows || l.SHA256 != d.SHA256) {
			c.add(Reason{Rule: "witness-table-digest", Status: Fail, Scenario: id, Field: t.Table, Claimed: digestText(l),
				Recomputed: digestText(d), Message: fmt.Sprintf("table %s rebuilt from the binlog (%d rows) is not the live table the "+
					"evidence digests (%d rows)", t.Table, d.Rows, l.Rows)})
		}
	}
	err := c.eng.reset(ctx)
	if err == nil {
		err = c.eng.load(ctx, usedTables(srcs, c.invs))
	}
	if err != nil {
		c.inconclusive(id, "sql-engine", "the end state rebuilt from the binlog could not be loaded: %v", err)
		return
	}
	c.witnessInvariants(ctx, sc)
}

// witnessInvariants runs every invariant on the end state rebuilt from the
// binlog: each must return no row, as live.
func (c *checker) witnessInvariants(ctx context.Context, sc *evidence.Scenario) {
	live := map[string]int64{}
	for _, r := range sc.Invariants {
		live[r.ID] = r.Rows
	}
	for _, inv := range c.invs {
		n, err := c.eng.countInvariant(ctx, inv)
		if err != nil {
			c.inconclusive(sc.ID, "sql-engine", "invariant %s could not run on the end state rebuilt from the binlog: %v", inv.ID, err)
			return
		}
		l, has := live[inv.ID]
		if n > 0 || (has && l != n) {
			c.add(Reason{Rule: "witness-invariant", Status: Fail, Scenario: sc.ID, Field: inv.ID, Claimed: liveText(l, has),
				Recomputed: strconv.FormatInt(n, 10), Message: fmt.Sprintf("invariant %s returns %d row(s) on the end state rebuilt "+
					"from the binlog (%s live). %s", inv.ID, n, liveText(l, has), inv.Meaning)})
		}
	}
}

func liveText(n int64, ok bool) string {
	if !ok {
		return "none recorded"
	}
	return strconv.FormatInt(n, 10)
}
