package evidence

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The boundary table (boundaries.go) is derived from the scenarios by a pure function; the
// runner calls it to fill Evidence.Boundaries, the verifier again and
// compares.
//
// The proof-boundary matrix is rendered from two things: the evidence's
// environment and scenarios, and the claims of what the run did (which
// fault fired how often, which was skipped, which actor was killed). This
// file holds the catalogue and the rendering only, shared by both sides.
// The claims are derived twice, by code that is not shared: the runner
// records its own (runner/proofclaims.go, from the logs it wrote) in
// Evidence.ProofClaims, and the verifier derives them again from the events
// and the witnesses (checks/proof.go), compares them item by item and
// renders the matrix from its own. Nothing here reads the clock, the
// environment or any file.

// Proof-boundary categories, in matrix order (the schema enumerates them).
const (
	CategoryReal      = "real components"
	CategoryFaults    = "fault injection"
	CategorySynthetic = "synthetic parts"
	CategoryNotRun    = "not run"
)

// Database flavours and Kafka modes as recorded in Environment.
const (
	FlavourMariaDB = "MariaDB"
	FlavourMySQL   = "MySQL"
	KafkaEmbedded  = "embedded"
	KafkaExternal  = "external"
	KafkaContainer = "container"
)

// ComputeProofBoundary renders ev's matrix from ev's own claims, those of
// the scenarios ev lists as run: what a writer of edited evidence (a test,
// a tool that trims a bundle) calls. It derives nothing; the runner and
// the verifier each derive the claims themselves.
func ComputeProofBoundary(ev *Evidence) []ProofRow {
	return RenderProofBoundary(ev, ev.ProofClaims.Ran(ev.Scenarios))
}

// RenderProofBoundary returns the proof-boundary matrix: for each category
// (real components, fault injection, synthetic parts, not run) what this
// run had and what cannot be inferred from it. The real components and the
// synthetic parts come from ev's environment and the scenarios that ran
// (status other than NOT_RUN); every fault under "had" and every fault class
// left out of "not run" comes from claims (a fault that fired), never from
// what a scenario declares. A nil claims is a run that claims nothing.
func RenderProofBoundary(ev *Evidence, claims *ProofClaims) []ProofRow {
	var ran []Scenario
	for _, sc := range ev.Scenarios {
		if sc.Status != StatusNotRun {
			ran = append(ran, sc)
		}
	}
	fr := faultRows(ev, ran, claims)
	rows := []ProofRow{
		proofReal(ev, ran),
		fr.faults,
		proofSynthetic(ran),
		proofNotRun(ev, claims, fr.notFired),
	}
	for i := range rows {
		rows[i].Had = fitList(rows[i].Had)
		rows[i].CannotInfer = fitList(rows[i].CannotInfer)
	}
	return rows
}

// Schema limits of a proof row: at most maxProofItems entries of at most
// maxProofText bytes each.
const (
	maxProofItems = 64
	maxProofText  = 4096
)

// fitList keeps a list within the schema's limits: over-long entries are
// clipped and a list that is too long ends with one entry saying how many
// were folded, so nothing is dropped silently. It never returns nil, so the
// JSON is [] rather than null.
func fitList(xs []string) []string {
	out := make([]string, 0, len(xs))
	for i, x := range xs {
		if len(out) == maxProofItems-1 && len(xs)-i > 1 {
			out = append(out, fmt.Sprintf("... and %d more entries not shown (schema limit of %d)", len(xs)-i, maxProofItems))
			break
		}
		out = append(out, clipText(x))
	}
	return out
}

func clipText(s string) string {
	if len(s) <= maxProofText {
		return s
	}
	const more = " ... (clipped)"
	cut := maxProofText - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}

// faultRefs returns how sc's fault points were injected: the spec's
// declaration when sc is a scenario this tool knows, declared with those
// points; otherwise each point with an unknown injection (the verifier
// reports the disagreement).
func faultRefs(sc Scenario) []spec.FaultRef {
	if s, ok := spec.Lookup(sc.ID); ok && slices.Equal(s.FaultPoints(), sc.FaultPoints) {
		return s.Faults
	}
	out := make([]spec.FaultRef, len(sc.FaultPoints))
	for i, p := range sc.FaultPoints {
		out[i] = spec.FaultRef{Point: spec.Point(p)}
	}
	return out
}

func scenarioIDs(scs []Scenario) string {
	ids := make([]string, len(scs))
	for i, sc := range scs {
		ids[i] = sc.ID
	}
	return strings.Join(ids, ", ")
}

func proofReal(ev *Evidence, ran []Scenario) ProofRow {
	env := ev.Environment
	db := env.Database
	row := ProofRow{Category: CategoryReal}
	if len(ran) == 0 {
		row.Had = append(row.Had, "no scenario ran: the components below were configured but not exercised")
	} else {
		row.Had = append(row.Had, fmt.Sprintf("%d scenario(s) ran against the components below: %s", len(ran), scenarioIDs(ran)))
	}
	row.Had = append(row.Had, fmt.Sprintf(
		"%s %s server over TCP (go-sql-driver/mysql)%s, isolation %s: real transactions, unique keys, row locks "+
			"(SELECT ... FOR UPDATE SKIP LOCKED), one scratch database per scenario", db.Flavour, db.Version,
		serverOrigin(db), db.Isolation))
	brokers := strings.Join(env.Kafka.Brokers, ", ")
	switch env.Kafka.Mode {
	case KafkaEmbedded:
		row.Had = append(row.Had, fmt.Sprintf(
			"embedded in-process broker at %s: %s; real Kafka wire protocol between franz-go clients and the broker, "+
				"real topics, partitions, offsets and consumer-group offset commits", brokers, env.Kafka.Implementation))
	case KafkaContainer:
		row.Had = append(row.Had, fmt.Sprintf(
			"broker in a container that the run started for itself (%s) and removed at its end, at %s: %s; real Kafka "+
				"wire protocol between franz-go clients and the broker, real topics, partitions, offsets and consumer-group "+
				"offset commits", containerText(env.Kafka.Container), brokers, env.Kafka.Implementation))
	default:
		row.Had = append(row.Had, fmt.Sprintf(
			"external Kafka at %s, recorded as %q; real Kafka wire protocol, topics, partitions, offsets and "+
				"consumer-group offset commits", brokers, env.Kafka.Implementation))
	}
	if env.ActorProcesses {
		row.Had = append(row.Had, "order service, relay and consumer as actors of the same binary, in-process and as separate OS processes in at least one scenario")
	} else {
		row.Had = append(row.Had, "order service, relay and consumer as in-process actors of the same binary (no separate OS processes)")
	}
	if s := env.SUT; s != nil {
		row.Had = append(row.Had, fmt.Sprintf("system under test: %s, claiming %s; the verifier checks the rule layers %s",
			s.Name, orNone(strings.Join(s.Features, ", ")), strings.Join(s.Layers, ", ")))
	}
	goVersion := env.Go
	if !strings.HasPrefix(goVersion, "go") {
		goVersion = "Go " + goVersion
	}
	row.Had = append(row.Had, fmt.Sprintf("%s on %s/%s", goVersion, env.OS, env.Arch))
	if w := witnessHad(ev.Witness); w != "" {
		row.Had = append(row.Had, w)
	}
	row.CannotInfer = realCannotInfer(env)
	row.CannotInfer = append(row.CannotInfer, witnessCannotInfer(ev.Witness)...)
	return row
}

// witnessHad says which witnesses the bundle holds: the systems' own
// record that verify derives the history from.
func witnessHad(w *Witness) string {
	if w == nil || (w.Database == nil && w.Broker == nil) {
		return ""
	}
	var parts []string
	if d := w.Database; d != nil {
		from := "its start"
		if d.GTIDStart != "" {
			from = "after " + d.GTIDStart
		}
		parts = append(parts, fmt.Sprintf("the database's binary log (%s of %s, server id %d, GTIDs from %s to %s, %d file(s))",
			d.Source, d.ServerVersion, d.ServerID, from, orNone(d.GTIDEnd), len(d.Files)))
	}
	if b := w.Broker; b != nil {
		parts = append(parts, fmt.Sprintf("the broker's own log (%s, %d file(s))", b.Source, len(b.Files)))
	}
	return "witnesses in the bundle: " + strings.Join(parts, " and ") + ", with their sha256: verify derives the history " +
		"from them and holds every actor event against it"
}

// witnessCannotInfer lists the claims no witness backs: what a missing
// witness would have confirmed rests on the actors' logs alone.
func witnessCannotInfer(w *Witness) []string {
	if w == nil {
		return []string{"unwitnessed: every claim (no witness object): the database's and the broker's side rest on the actors' logs alone"}
	}
	var out []string
	for _, m := range w.Missing {
		what, why, _ := strings.Cut(m, ": ")
		out = append(out, fmt.Sprintf("unwitnessed: what the actors say about the %s (%s) rests on their logs alone", what, why))
	}
	return out
}

// serverOrigin says who started the database server, when the evidence
// says it (evidence of runs before private servers does not).
func serverOrigin(db DatabaseEnv) string {
	switch db.Mode {
	case DatabasePrivate:
		return ", a private mariadbd that the run started for itself (fresh data directory, binary log on, " +
			"removed at the end)"
	case DatabaseContainer:
		return ", in a container that the run started for itself (" + containerText(db.Container) +
			"; binary log on) and removed at its end"
	case DatabaseExternal:
		return ", an external server named by the user (" + db.DSN + ")"
	}
	return ""
}

// realCannotInfer is what the real components of env do not show: the
// broker and database behaviour they are not, and the layers of rules the
// system under test does not claim.
func realCannotInfer(env Environment) []string {
	db := env.Database
	var row ProofRow
	switch {
	case kfakeBroker(env.Kafka):
		one := "one in-process broker"
		if env.Kafka.Mode == KafkaContainer {
			one = "one kfake broker in a container"
		}
		row.CannotInfer = append(row.CannotInfer,
			"Apache Kafka broker behaviour: kfake is not Apache Kafka broker code (log storage, fsync, request handling, "+
				"quotas, timing and error paths differ)",
			"replication, ISR, acks=all durability and partition leadership changes: "+one+" holds the only "+
				"replica of every partition, so none of these exist in this run")
	case env.Kafka.Mode == KafkaContainer:
		row.CannotInfer = append(row.CannotInfer,
			"which broker software served the run beyond the image's name and digest: the Kafka protocol does not name it",
			"replication, ISR, acks=all durability and partition leadership changes: a single broker node held the only "+
				"replica of every partition",
			"the behaviour of a production cluster's configuration (its broker settings, several nodes, TLS and SASL): "+
				"the container ran one node with the image's defaults and a plaintext listener")
	default:
		row.CannotInfer = append(row.CannotInfer,
			fmt.Sprintf("which broker implementation and version served the run: the tool did not verify it (recorded only as %q)",
				env.Kafka.Implementation),
			"replication, ISR, acks=all durability and partition leadership changes: no broker or partition failure was "+
				"provoked, so the cluster's replication settings were not exercised")
	}
	switch db.Flavour {
	case FlavourMariaDB:
		row.CannotInfer = append(row.CannotInfer, fmt.Sprintf(
			"MySQL behaviour: MariaDB %s is not MySQL 8.4 (its JSON column is LONGTEXT with a JSON_VALID check and is not "+
				"normalised; isolation and locking differ in details such as gap locks, SKIP LOCKED and error codes); "+
				"MySQL was not tested", db.Version))
	case FlavourMySQL:
		row.CannotInfer = append(row.CannotInfer,
			"MariaDB behaviour: MariaDB was not tested (its JSON column is LONGTEXT and not normalised, and its isolation "+
				"and locking differ in details)")
		if !strings.HasPrefix(db.Version, "8.4") {
			row.CannotInfer = append(row.CannotInfer, fmt.Sprintf("MySQL 8.4 behaviour: the server was MySQL %s", db.Version))
		}
	default:
		row.CannotInfer = append(row.CannotInfer, fmt.Sprintf(
			"MySQL or MariaDB behaviour: the database flavour %q is not one this tool knows", db.Flavour))
	}
	switch db.Mode {
	case DatabasePrivate:
		row.CannotInfer = append(row.CannotInfer,
			"the behaviour of a production server's configuration (its my.cnf, buffer pool, redo log and sync "+
				"settings): the private server ran with MariaDB's defaults and a small buffer pool and redo log")
	case DatabaseContainer:
		row.CannotInfer = append(row.CannotInfer,
			"the behaviour of a production server's configuration (its my.cnf, buffer pool, redo log and sync "+
				"settings): the container ran with the image's defaults and the binary-log options")
	}
	row.CannotInfer = append(row.CannotInfer,
		fmt.Sprintf("other %s versions than %s, and isolation levels other than %s", db.Flavour, db.Version, db.Isolation),
		"database replication, failover or a clustered setup: one server was used")
	if db.Isolation != "REPEATABLE-READ" && db.Isolation != "REPEATABLE READ" {
		row.CannotInfer = append(row.CannotInfer, fmt.Sprintf(
			"behaviour under REPEATABLE-READ, the level the design assumes: this run used %s", db.Isolation))
	}
	row.CannotInfer = append(row.CannotInfer,
		"throughput, latency or behaviour under sustained load: each scenario places a handful of orders")
	if s := env.SUT; s != nil {
		for _, l := range spec.Layers {
			if !slices.Contains(s.Layers, string(l)) {
				row.CannotInfer = append(row.CannotInfer, l.Unchecked())
			}
		}
	}
	return row.CannotInfer
}
