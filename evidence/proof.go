package evidence

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// The boundary table and the proof-boundary matrix are derived from the
// rest of the evidence by pure functions: the runner calls them to fill
// Evidence.Boundaries and Evidence.ProofBoundary, the verifier calls them
// again and compares. They must not read the clock, the environment or any
// file.

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
)

// FaultSIGKILL, among a scenario's fault points, says that the scenario's
// other fault points were injected by killing the actor's OS process with
// SIGKILL (runner.FaultSIGKILL; evidence/ cannot import the runner). Without
// it a fault point was injected in-process: the actor abandoned the
// operation as if it had died, and no signal was sent. The proof-boundary
// matrix counts a kill only when Environment.ActorProcesses is also true.
const FaultSIGKILL = "sigkill"

// boundaryDesign is the boundary table of DESIGN.md: what each boundary's
// U80 scenario injects, how the chain recovers and when it is accepted.
var boundaryDesign = []struct {
	boundary, scenario, injection, recovery, accepted string
}{
	{
		boundary:  BoundaryCommit,
		scenario:  "txBoundaryRollback",
		injection: "unique conflict on the outbox event_id at the last write (a seeded decoy row)",
		recovery:  "whole rollback",
		accepted:  "stock, orders, idempotency, outbox all as before; decoy row untouched",
	},
	{
		boundary:  BoundarySend,
		scenario:  "sendBeforeMarkCrash",
		injection: "publish succeeds, mark never happens, lease expires",
		recovery:  "relay B claims v2, publishes the same event_id again; A's stale mark hits 0 rows",
		accepted:  "2 deliveries, 1 effect, state SENT",
	},
	{
		boundary:  BoundaryAck,
		scenario:  "offsetReplay",
		injection: "effect committed, offset not committed",
		recovery:  "new member of the same group replays",
		accepted:  "1 replay, inbox rejects it, 1 effect",
	},
}

// ComputeBoundaries returns the boundary table: one row per boundary
// (commit, send, ack, in that order) with the design's injection, recovery
// and acceptance texts, and the status and figures of the U80 scenario that
// exercises it. A scenario absent from scs is NOT_RUN; the figures of a
// scenario that did not run are empty.
func ComputeBoundaries(scs []Scenario) []Boundary {
	out := make([]Boundary, 0, len(boundaryDesign))
	for _, d := range boundaryDesign {
		b := Boundary{
			Boundary:     d.boundary,
			Injection:    d.injection,
			Recovery:     d.recovery,
			AcceptedWhen: d.accepted,
			Scenario:     d.scenario,
			Status:       StatusNotRun,
		}
		if sc, ok := findScenario(scs, "U80", d.scenario); ok && sc.Status != "" {
			b.Status = sc.Status
			if sc.Status != StatusNotRun {
				b.Figures = formatMetrics(sc.Metrics)
			}
		}
		out = append(out, b)
	}
	return out
}

func findScenario(scs []Scenario, suite, id string) (Scenario, bool) {
	for _, sc := range scs {
		if sc.Suite == suite && sc.ID == id {
			return sc, true
		}
	}
	return Scenario{}, false
}

func formatMetrics(ms []Metric) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Name + "=" + m.Value
	}
	return strings.Join(parts, " ")
}

// faultDescription says how this tool injects a fault point and what that
// injection does not show.
type faultDescription struct {
	role        string // the actor the point is in
	how         string // in-process injection
	killed      string // injection by SIGKILL of the actor's process; "" if not possible
	cannotInfer string
	// simulated is what an in-process injection of a point that could be
	// a kill does not show; empty for the generic text.
	simulated string
	// needsPlant names the planted bug without which the point cannot
	// fire; unreachable says what arming it shows in a run without it.
	needsPlant, unreachable string
}

// faultCatalogue describes the fault points this tool knows. The ids are
// those of runner/fault and the commit-boundary conflict; evidence/ cannot
// import the runner, so they are repeated here as plain strings.
var faultCatalogue = map[string]faultDescription{
	"outbox-unique-conflict": {
		role: "order service",
		how: "a real database error: the unique key on outbox.event_id rejects the order transaction's last write " +
			"because the scenario seeded a decoy row with that event_id (duplicate-key error 1062 raised by the server, not simulated)",
		cannotInfer: "other failures inside the order transaction (deadlock, lock wait timeout, connection lost before COMMIT, " +
			"server crash): only a constraint violation at the last write was provoked",
	},
	"after-publish-before-mark": {
		role: "relay",
		how: "the relay abandoned its work after the broker acknowledged the publish and before the mark " +
			"(an in-process simulated crash: no signal, no process died), then the scenario expired its lease by SQL " +
			"(lease_until moved into the past) instead of waiting for the clock",
		killed: "the relay ran as its own OS process and was killed with SIGKILL after the broker acknowledged the publish " +
			"and before the mark",
		cannotInfer: "a lease expired by SQL is not a lease that ran out on the clock: a slow relay that is still alive when its lease " +
			"expires, clock skew between relays and database, and lease renewal were not exercised",
		simulated: "a lease expired by SQL after an in-process crash is not a relay process killed by a signal: no OS process died, " +
			"no connection was dropped by the kernel, no client buffer was lost",
	},
	"after-effect-before-offset-commit": {
		role: "consumer",
		how: "the consumer stopped after its effect transaction committed and before committing the offset " +
			"(an in-process simulated crash: its client left the group without committing; no signal, no process died)",
		killed: "the consumer's OS process was killed with SIGKILL after its effect transaction committed and before committing the offset",
		cannotInfer: "rebalances driven by session timeouts under load, an offset commit refused by the broker, and a consumer " +
			"that keeps running after losing its partitions (a zombie) were not exercised",
	},
	"after-claim-before-publish": {
		role:   "relay",
		how:    "the relay abandoned a claim before publishing (an in-process simulated crash: no signal, no process died)",
		killed: "the relay's OS process was killed with SIGKILL while holding a claim, before publishing",
		cannotInfer: "a publish that was in flight when the relay died (the broker may or may not have appended it) was not " +
			"exercised by this point",
	},
	"after-order-commit-before-outbox": {
		role: "order service",
		how: "the order service stopped after the order committed and before writing its outbox intent " +
			"(reachable only when the intent is written outside the order transaction, i.e. with the planted bug outbox-outside-tx)",
		killed:      "the order service's OS process was killed with SIGKILL after the order committed and before writing its outbox intent",
		cannotInfer: "nothing about the clean design, where the intent is written in the order transaction and this window does not exist",
		needsPlant:  "outbox-outside-tx",
		unreachable: "armed in the order service after the order commit and before the outbox intent, but it cannot fire in this run: " +
			"the intent is written inside the order transaction, so there is no such window (it fires only with the planted bug outbox-outside-tx)",
	},
}

// ComputeProofBoundary returns the proof-boundary matrix: for each category
// (real components, fault injection, synthetic parts, not run) what this
// run had and what cannot be inferred from it. Every entry is derived from
// ev.Environment, ev.Run and the scenarios that ran (status other than
// NOT_RUN); nothing that did not run is listed as had, except as
// "NOT RUN: ...". The result depends only on ev.
func ComputeProofBoundary(ev *Evidence) []ProofRow {
	var ran []Scenario
	for _, sc := range ev.Scenarios {
		if sc.Status != StatusNotRun {
			ran = append(ran, sc)
		}
	}
	killed := killedRoles(ev, ran)
	rows := []ProofRow{
		proofReal(ev, ran),
		proofFaults(ev, ran),
		proofSynthetic(ran),
		proofNotRun(ev, killed),
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

// killedScenario tells whether sc injected its fault points by SIGKILL:
// it declares FaultSIGKILL and the environment says actors ran as OS
// processes.
func killedScenario(ev *Evidence, sc Scenario) bool {
	return ev.Environment.ActorProcesses && slices.Contains(sc.FaultPoints, FaultSIGKILL)
}

// killedRoles returns the actors (relay, consumer, order service) that
// were killed by SIGKILL in scenarios that ran.
func killedRoles(ev *Evidence, ran []Scenario) map[string]bool {
	out := map[string]bool{}
	for _, sc := range ran {
		if !killedScenario(ev, sc) {
			continue
		}
		for _, fp := range sc.FaultPoints {
			if d, ok := faultCatalogue[fp]; ok && d.killed != "" {
				out[d.role] = true
			}
		}
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
		"%s %s server over TCP (go-sql-driver/mysql), isolation %s: real transactions, unique keys, row locks "+
			"(SELECT ... FOR UPDATE SKIP LOCKED), one scratch database per scenario", db.Flavour, db.Version, db.Isolation))
	brokers := strings.Join(env.Kafka.Brokers, ", ")
	switch env.Kafka.Mode {
	case KafkaEmbedded:
		row.Had = append(row.Had, fmt.Sprintf(
			"embedded in-process broker at %s: %s; real Kafka wire protocol between franz-go clients and the broker, "+
				"real topics, partitions, offsets and consumer-group offset commits", brokers, env.Kafka.Implementation))
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
	goVersion := env.Go
	if !strings.HasPrefix(goVersion, "go") {
		goVersion = "Go " + goVersion
	}
	row.Had = append(row.Had, fmt.Sprintf("%s on %s/%s", goVersion, env.OS, env.Arch))

	switch env.Kafka.Mode {
	case KafkaEmbedded:
		row.CannotInfer = append(row.CannotInfer,
			"Apache Kafka broker behaviour: kfake is not Apache Kafka broker code (log storage, fsync, request handling, "+
				"quotas, timing and error paths differ)",
			"replication, ISR, acks=all durability and partition leadership changes: one in-process broker holds the only "+
				"replica of every partition, so none of these exist in this run")
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
	row.CannotInfer = append(row.CannotInfer,
		fmt.Sprintf("other %s versions than %s, and isolation levels other than %s", db.Flavour, db.Version, db.Isolation),
		"database replication, failover or a clustered setup: one server was used")
	if db.Isolation != "REPEATABLE-READ" && db.Isolation != "REPEATABLE READ" {
		row.CannotInfer = append(row.CannotInfer, fmt.Sprintf(
			"behaviour under REPEATABLE-READ, the level the design assumes: this run used %s", db.Isolation))
	}
	row.CannotInfer = append(row.CannotInfer,
		"throughput, latency or behaviour under sustained load: each scenario places a handful of orders")
	return row
}

func proofFaults(ev *Evidence, ran []Scenario) ProofRow {
	row := ProofRow{Category: CategoryFaults}
	if ev.Run.Planted != "" {
		row.Had = append(row.Had, fmt.Sprintf(
			"NEGATIVE CONTROL: the bug %q was planted into the system under test; failures are expected and show "+
				"that the scenarios and the verifier catch it", ev.Run.Planted))
		row.CannotInfer = append(row.CannotInfer, fmt.Sprintf(
			"anything about the unmodified system: this run had the planted bug %q (a negative control), so it is "+
				"not evidence that the clean design holds", ev.Run.Planted))
	}
	// Collect the points declared by the scenarios that ran, with the
	// scenarios that declared them, in first-seen order.
	type use struct {
		point  string
		killed bool
		by     []string
	}
	var uses []*use
	index := map[string]*use{}
	var unkilled []string // scenarios that declare SIGKILL without actor processes
	for _, sc := range ran {
		k := killedScenario(ev, sc)
		if !k && slices.Contains(sc.FaultPoints, FaultSIGKILL) {
			unkilled = append(unkilled, sc.ID)
		}
		for _, p := range sc.FaultPoints {
			if p == FaultSIGKILL {
				continue
			}
			key := p
			if k {
				key += "\x00" + FaultSIGKILL
			}
			u := index[key]
			if u == nil {
				u = &use{point: p, killed: k}
				index[key] = u
				uses = append(uses, u)
			}
			if len(u.by) == 0 || u.by[len(u.by)-1] != sc.ID {
				u.by = append(u.by, sc.ID)
			}
		}
	}
	if len(unkilled) > 0 {
		row.Had = append(row.Had, fmt.Sprintf(
			"%s declared in %s, but the evidence says no actor ran as an OS process: not counted as a kill",
			FaultSIGKILL, strings.Join(unkilled, ", ")))
	}
	if len(uses) == 0 {
		row.Had = append(row.Had, "no fault point was declared by the scenarios that ran")
	}
	for _, u := range uses {
		d, known := faultCatalogue[u.point]
		if known && d.needsPlant != "" && ev.Run.Planted != d.needsPlant {
			row.Had = append(row.Had, fmt.Sprintf("%s (in %s): %s", u.point, strings.Join(u.by, ", "), d.unreachable))
			row.CannotInfer = append(row.CannotInfer, fmt.Sprintf(
				"%s: how the system recovers from a fault there, since it did not fire in this run (only that the window is absent)", u.point))
			continue
		}
		how := d.how
		switch {
		case !known:
			how = "a fault point this tool version does not describe: how it was injected is not known to the report"
		case u.killed && d.killed != "":
			how = d.killed
		case u.killed:
			how += " (the scenario declares " + FaultSIGKILL + ", but this point is not in a killable actor)"
		}
		row.Had = append(row.Had, fmt.Sprintf("%s (in %s): %s", u.point, strings.Join(u.by, ", "), how))
		switch {
		case !known:
			row.CannotInfer = append(row.CannotInfer, fmt.Sprintf("%s: what this point proves; the tool does not describe it", u.point))
		case u.killed && u.point == "after-publish-before-mark":
			row.CannotInfer = append(row.CannotInfer, u.point+" (SIGKILL): a lease that runs out while the old relay is still "+
				"alive (a slow relay, not a dead one), clock skew between relays and database, and lease renewal were not exercised")
		default:
			row.CannotInfer = append(row.CannotInfer, u.point+": "+d.cannotInfer)
		}
		if known && d.killed != "" && !u.killed {
			sim := d.simulated
			if sim == "" {
				sim = "recovery from a process killed by a signal: the fault was simulated in-process, so no OS process died " +
					"and no connection was dropped by the kernel"
			}
			row.CannotInfer = append(row.CannotInfer, u.point+": "+sim)
		}
	}
	return row
}

func proofSynthetic(ran []Scenario) ProofRow {
	row := ProofRow{Category: CategorySynthetic}
	if len(ran) == 0 {
		row.Had = append(row.Had, "none: no scenario ran")
		return row
	}
	row.Had = append(row.Had,
		"HS256 bearer tokens signed by the tool with a test secret",
		"generated SKUs, quantities, amounts and idempotency keys; stock seeded by each scenario",
		"the JSON payload shape of the outbox intent, defined by this tool (compared by identity fields after parsing)",
		"the notification table as a stand-in for a real downstream service: the effect is a row in the same database as the inbox",
	)
	row.CannotInfer = append(row.CannotInfer,
		"a real identity provider, key rotation or asymmetric token algorithms (RS256, ES256)",
		"production data: real catalogues, hot SKUs, price and rounding rules, data volumes",
		"compatibility with another service's event schema, schema evolution or a schema registry",
		"exactly-once effect on an external system that cannot join the inbox transaction (e-mail, payments): "+
			"such an effect needs its own idempotency key downstream",
	)
	return row
}

// notRunCatalogue lists fault classes this tool knows of and does not run
// (kill -9 excepted when a scenario did kill an actor).
var notRunCatalogue = []struct {
	key, label, had, cannotInfer string
}{
	{
		key:   "kill",
		label: "kill -9",
		had:   "NOT RUN: kill -9 of an actor (SIGKILL of the order service, relay or consumer process mid-operation)",
		cannotInfer: "recovery from a real process death: in-flight state lost, a truncated event log, connections " +
			"dropped by the kernel",
	},
	{
		label: "producer unknown outcome",
		had:   "NOT RUN: producer unknown outcome (the publish times out after the broker appended the record)",
		cannotInfer: "that an ambiguous publish, retried or re-claimed, is absorbed by the inbox; only a crash after an " +
			"acknowledged publish can have been injected",
	},
	{
		label:       "broker restart",
		had:         "NOT RUN: broker restart",
		cannotInfer: "producer retries during leader unavailability, and consumer-group recovery of committed offsets across a broker restart",
	},
	{
		label:       "database crash",
		had:         "NOT RUN: database crash (server killed or restarted mid-transaction)",
		cannotInfer: "durability of committed transactions (redo log, fsync) and the fate of in-doubt transactions after a server crash",
	},
	{
		label: "network partition",
		had:   "NOT RUN: network partition between actors, database and broker",
		cannotInfer: "a relay cut off but alive while another claims its intent, and timeouts that are not failures " +
			"(the request may have succeeded)",
	},
	{
		label:       "dead-letter routing",
		had:         "NOT RUN: dead-letter routing of records that can never be applied",
		cannotInfer: "handling of a poison record (bad payload, unknown order): no dead-letter path was exercised",
	},
}

// keys returns the keys of m, sorted.
func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func proofNotRun(ev *Evidence, killed map[string]bool) ProofRow {
	row := ProofRow{Category: CategoryNotRun}
	if ev.Run.Interrupted {
		row.Had = append(row.Had, "NOT RUN: the run was interrupted before every selected scenario finished")
		row.CannotInfer = append(row.CannotInfer, "interrupted run: anything about the scenarios that did not finish")
	}
	for _, sc := range ev.Scenarios {
		if sc.Status != StatusNotRun {
			continue
		}
		why := sc.Reason
		if why == "" {
			why = "no reason recorded"
		}
		row.Had = append(row.Had, fmt.Sprintf("NOT RUN: scenario %s (%s, boundary %s): %s", sc.ID, sc.Suite, sc.Boundary, why))
		what := sc.Description
		if what == "" {
			what = "what it checks"
		}
		row.CannotInfer = append(row.CannotInfer, fmt.Sprintf("%s (not run): %s", sc.ID, what))
	}
	for _, c := range notRunCatalogue {
		if c.key == "kill" && len(killed) > 0 {
			var rest []string
			for _, r := range []string{"order service", "relay", "consumer"} {
				if !killed[r] {
					rest = append(rest, r)
				}
			}
			if len(rest) == 0 {
				continue
			}
			row.Had = append(row.Had, fmt.Sprintf("NOT RUN: kill -9 of the %s (SIGKILL mid-operation; only the %s was killed)",
				strings.Join(rest, " or the "), strings.Join(keys(killed), " and the ")))
			row.CannotInfer = append(row.CannotInfer, c.label+": "+c.cannotInfer)
			continue
		}
		row.Had = append(row.Had, c.had)
		row.CannotInfer = append(row.CannotInfer, c.label+": "+c.cannotInfer)
	}
	return row
}
