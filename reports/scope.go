package reports

import (
	"strings"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// What the report adds to the proof-boundary matrix of the evidence. The
// matrix itself is rendered by evidence.RenderProofBoundary from the runner's
// claims, which the verifier derives again; the report renders it as it is. Two things it does not
// carry are stated here, each marked in the report as the report's own:
// what a not-run item would need to run, and the items the original case
// lists as not covered by its scope, which no configuration of this tool
// runs. Once the matrix carries an item itself (evidence regenerated with
// a tool that lists it), the report's copy is dropped (see coveredBy).

// need is what a not-run entry of the matrix would need to run, found by
// the start of the entry, for the entries the fault catalogue
// (spec.NotInjected, whose Needs the report prints) does not cover.
type need struct{ prefix, needs string }

var notRunNeeds = []need{
	{"NOT RUN: nemesis-", "a chaos run whose schedule draws it: another --seed (orderflow-audit explore tries many), " +
		"or --faults naming the kinds wanted, with a --duration long enough for them"},
	{"NOT RUN: the run was interrupted", "a run that is not interrupted"},
}

// outOfScope is one item the original case lists as not covered.
type outOfScope struct {
	label, cannot, needs string
}

// caseNotCovered lists, in the case's words, what it does not cover and
// this tool does not run in any configuration.
var caseNotCovered = []outOfScope{
	{"retry topics", "a failed effect re-published to a retry topic and consumed again later: the consumer here has no failure branch to route",
		"a consumer with a failure branch, retry topics, and a scenario that makes an effect fail once"},
	{"scheduled-table (due-time) recovery", "recovery of tasks kept in a table with a due time (a worker that dies holding a due task, the task picked up when due)",
		"a due-time task table with its poller, and a scenario that kills the worker holding a task"},
	{"Kafka transactions", "retry output and the source offsets committed atomically by a transactional producer (read-process-write)",
		"a transactional producer (franz-go's GroupTransactSession) on a broker whose transactions are trusted (Apache Kafka), and a scenario that aborts one"},
	{"observability metrics", "consumer lag, relay backlog, the age of the oldest PENDING intent, and alerts on them",
		"the actors exporting these metrics and a scenario that checks them during a fault"},
	{"deployment evolution", "rolling upgrades: an old and a new version of relay or consumer running together, outbox/inbox schema migrations, payload versions",
		"two versions of the system under test in one scenario, and a migration applied mid-run"},
	{"broker disk failure", "losing or corrupting a broker's log directory, and recovery from replicas",
		"a replicated Apache Kafka cluster (three brokers) and a fault injected into one broker's disk"},
	{"OS crash / power loss", "durability of what the database and the broker acknowledged (fsync, redo log, page cache) when the machine stops",
		"the database and the broker on a file system that can drop unsynced writes (a VM killed hard, or a fault-injecting file system)"},
}

// stockCaveat is a caveat of the commit boundary the case states and the
// matrix does not: shown with the fault that injects at that boundary.
var stockCaveat = outOfScope{
	label: "outbox-unique-conflict",
	cannot: "that the stock decrement really happened and was rolled back: the intermediate stock value (after the decrement, " +
		"before the rollback) was never observed by another connection, so the rollback is inferred from the final state " +
		"(stock as before, no rows written), not seen",
	needs: "a second connection reading the stock during the transaction (READ UNCOMMITTED), or the database's binlog " +
		"witness showing that the transaction wrote nothing that committed",
}

// neededFor returns what a not-run entry would need, or "": the
// catalogue's text for a fault class, else the report's own.
func neededFor(entry string) string {
	for _, c := range spec.NotInjected {
		if strings.HasPrefix(strings.ToLower(entry), "not run: "+strings.ToLower(c.Label)) {
			return c.Needs
		}
	}
	for _, n := range notRunNeeds {
		if strings.HasPrefix(entry, n.prefix) {
			return n.needs
		}
	}
	return ""
}

// coveredBy tells whether the matrix already lists a case item: some
// entry of its not-run row starts with "NOT RUN: <label>".
func coveredBy(notRun []string, label string) bool {
	for _, e := range notRun {
		if strings.HasPrefix(strings.ToLower(e), "not run: "+strings.ToLower(label)) {
			return true
		}
	}
	return false
}
