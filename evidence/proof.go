package evidence

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The boundary table is derived from the scenarios by a pure function; the
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

// ComputeBoundaries returns the boundary table: one row per boundary
// (commit, send, ack, in that order) with the design's injection, recovery
// and acceptance texts, and the status and figures of the U80 scenario that
// exercises it. A scenario absent from scs is NOT_RUN; the figures of a
// scenario that did not run are empty.
func ComputeBoundaries(scs []Scenario) []Boundary {
	rows := spec.Boundaries()
	out := make([]Boundary, 0, len(rows))
	for _, d := range rows {
		b := Boundary{
			Boundary:     d.Boundary,
			Injection:    d.Design.Injection,
			Recovery:     d.Design.Recovery,
			AcceptedWhen: d.Design.Accepted,
			Scenario:     d.ID,
			Status:       StatusNotRun,
		}
		if sc, ok := findScenario(scs, d.Suite, d.ID); ok && sc.Status != "" {
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

// ProofClaims are what the runner says the run did, as far as the
// proof-boundary matrix rests on it: for every scenario that ran, each
// fault point it declares, how often that fault fired and was skipped,
// and which actors it killed.
type ProofClaims struct {
	Faults []FaultClaim `json:"faults"`
}

// FaultClaim is what one fault point of one scenario did.
type FaultClaim struct {
	Scenario string `json:"scenario"`
	Point    string `json:"point"`
	// Fired is how many times the fault was injected: its injection is in
	// the logs and, where a witness can show it, in the witness.
	Fired int `json:"fired"`
	// Skipped is how many times the chaos schedule drew it and it found
	// nothing to hit (no process in the slot, no open transaction).
	Skipped int `json:"skipped"`
	// Missed is how many of the fired faults of an aimed kind (pause,
	// conn-kill) missed their aim and struck wherever the process was.
	Missed int `json:"missed"`
	// Killed are the actors (spec.ActorOrders, ActorRelay, ActorConsumer)
	// whose OS process the fault ended with SIGKILL, as the process
	// record shows; sorted, never nil.
	Killed []string `json:"killed"`
}

// Claim returns the claim of scenario's point, and whether there is one.
func (c *ProofClaims) Claim(scenario, point string) (FaultClaim, bool) {
	if c == nil {
		return FaultClaim{}, false
	}
	for _, f := range c.Faults {
		if f.Scenario == scenario && f.Point == point {
			return f, true
		}
	}
	return FaultClaim{}, false
}

// ClaimedItem names a claim for a reader: "nemesis-kill in chaos".
func (f FaultClaim) ClaimedItem() string { return f.Point + " in " + f.Scenario }

// String says what a claim claims, for a reason's claimed and
// recomputed fields.
func (f FaultClaim) String() string {
	s := fmt.Sprintf("fired %d, skipped %d", f.Fired, f.Skipped)
	if f.Missed > 0 {
		s += fmt.Sprintf(", missed its aim %d", f.Missed)
	}
	if len(f.Killed) > 0 {
		s += ", killed the " + strings.Join(f.Killed, ", the ")
	}
	return s
}

// Ran returns the claims of the scenarios scs lists as run: what is left
// of them once a bundle's scenarios were edited (nil stays nil).
func (c *ProofClaims) Ran(scs []Scenario) *ProofClaims {
	if c == nil {
		return nil
	}
	ran := map[string]bool{}
	for _, sc := range scs {
		if sc.Status != StatusNotRun {
			ran[sc.ID] = true
		}
	}
	out := &ProofClaims{Faults: []FaultClaim{}}
	for _, f := range c.Faults {
		if ran[f.Scenario] {
			out.Faults = append(out.Faults, f)
		}
	}
	return out
}

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

// faultRowsOut is the fault-injection row and the entries the not-run
// row takes from it: the declared faults that did not fire.
type faultRowsOut struct {
	faults   ProofRow
	notFired []pair
}

// pair is a not-run entry with what it leaves unproven.
type pair struct{ had, cannot string }

// faultRows lists the faults that fired, by fault-table row, with the
// scenarios they fired in and how often; the declared faults that did not
// fire go to the not-run row, each as what it is: unreachable without its
// planted bug, drawn by the chaos schedule and skipped, or not drawn.
func faultRows(ev *Evidence, ran []Scenario, claims *ProofClaims) faultRowsOut {
	row := ProofRow{Category: CategoryFaults}
	if ev.Run.Planted != "" {
		row.Had = append(row.Had, fmt.Sprintf(
			"NEGATIVE CONTROL: the bug %q was planted into the system under test; failures are expected and show "+
				"that the scenarios and the verifier catch it", ev.Run.Planted))
		row.CannotInfer = append(row.CannotInfer, fmt.Sprintf(
			"anything about the unmodified system: this run had the planted bug %q (a negative control), so it is "+
				"not evidence that the clean design holds", ev.Run.Planted))
	}
	// The faults that fired, with the scenarios they fired in, in
	// first-seen order.
	type use struct {
		ref           spec.FaultRef
		by            []string
		fired, missed int
	}
	var uses []*use
	index := map[spec.FaultRef]*use{}
	var unkilled []string // scenarios that declare a signal without actor processes
	var out faultRowsOut
	for _, sc := range ran {
		var notDrawn []string
		for _, r := range faultRefs(sc) {
			c, _ := claims.Claim(sc.ID, string(r.Point))
			if c.Fired == 0 {
				if p, ok := notFired(ev, sc, r, c); ok {
					out.notFired = append(out.notFired, p)
				} else {
					notDrawn = append(notDrawn, string(r.Point))
				}
				continue
			}
			if r.Injection == spec.InjectSignal && !ev.Environment.ActorProcesses {
				if !slices.Contains(unkilled, sc.ID) {
					unkilled = append(unkilled, sc.ID)
				}
				r.Injection = spec.InjectHook
			}
			u := index[r]
			if u == nil {
				u = &use{ref: r}
				index[r] = u
				uses = append(uses, u)
			}
			if len(u.by) == 0 || u.by[len(u.by)-1] != sc.ID {
				u.by = append(u.by, sc.ID)
			}
			u.fired += c.Fired
			u.missed += c.Missed
		}
		if len(notDrawn) > 0 {
			out.notFired = append(out.notFired, pair{
				fmt.Sprintf("NOT RUN: %s (in %s): declared, but the schedule did not draw %s (the seed and --faults choose)",
					joinAnd(notDrawn), sc.ID, oneOrThese(len(notDrawn), "it", "them")),
				fmt.Sprintf("%s: what %s would have exercised (the fault table says what each simulates)",
					joinAnd(notDrawn), oneOrThese(len(notDrawn), "it", "they"))})
		}
	}
	if len(unkilled) > 0 {
		row.Had = append(row.Had, fmt.Sprintf(
			"SIGKILL declared in %s, but the evidence says no actor ran as an OS process: not counted as a kill",
			strings.Join(unkilled, ", ")))
	}
	if len(uses) == 0 {
		row.Had = append(row.Had, "no fault fired in the scenarios that ran")
	}
	for _, u := range uses {
		had, cannot := describeFault(ev, u.ref)
		how := times(u.fired)
		if u.missed > 0 {
			how += fmt.Sprintf(" (%d of them missed %s aim and struck wherever the process was)", u.missed,
				oneOrThese(u.fired, "its", "their"))
		}
		row.Had = append(row.Had, fmt.Sprintf("%s (in %s), %s: %s", u.ref.Point, strings.Join(u.by, ", "), how, had))
		row.CannotInfer = append(row.CannotInfer, cannot...)
	}
	out.faults = row
	return out
}

// notFired says why a declared fault r of sc did not fire, as a not-run
// entry; false for a nemesis fault the schedule did not draw (listed
// together, per scenario).
func notFired(ev *Evidence, sc Scenario, r spec.FaultRef, c FaultClaim) (pair, bool) {
	p := string(r.Point)
	f, known := spec.LookupFault(r)
	switch {
	case !known:
		return pair{fmt.Sprintf("NOT RUN: %s (in %s): a fault point this tool version does not describe, and it did not fire", p, sc.ID),
			p + ": what this point proves; the tool does not describe it"}, true
	case f.NeedsPlant != "" && ev.Run.Planted != f.NeedsPlant:
		return pair{fmt.Sprintf("NOT RUN: %s (in %s): %s", p, sc.ID, f.Unreachable),
			p + ": how the system recovers from a fault there, since it did not fire in this run (only that the window is absent)"}, true
	case c.Skipped > 0:
		return pair{fmt.Sprintf("NOT RUN: %s (in %s): drawn by the schedule %s and skipped each time: it found nothing to hit "+
			"(no process in the slot, no open transaction, or no server of the run's own to crash)", p, sc.ID, times(c.Skipped)),
			p + ": " + f.Simulates + ", which it stands for, was not exercised"}, true
	case strings.HasPrefix(p, spec.NemesisPrefix):
		return pair{}, false
	}
	return pair{fmt.Sprintf("NOT RUN: %s (in %s): declared, but it did not fire in this run", p, sc.ID),
		p + ": " + f.Simulates + ", which it stands for, was not exercised"}, true
}

// times says how often: "once", "2 times".
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

func oneOrThese(n int, one, these string) string {
	if n == 1 {
		return one
	}
	return these
}

// joinAnd joins xs as a sentence does: "a", "a and b", "a, b and c".
func joinAnd(xs []string) string { return joinWith(xs, " and ") }

// joinOr joins xs as "a", "a or b", "a, b or c".
func joinOr(xs []string) string { return joinWith(xs, " or ") }

func joinWith(xs []string, last string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + last + xs[len(xs)-1]
}

// describeFault says how a fault was injected and what it leaves unproven,
// from the fault table.
func describeFault(ev *Evidence, r spec.FaultRef) (string, []string) {
	p := string(r.Point)
	f, known := spec.LookupFault(r)
	switch {
	case !known:
		return "a fault point this tool version does not describe: how it was injected is not known to the report",
			[]string{p + ": what this point proves; the tool does not describe it"}
	case f.NeedsPlant != "" && ev.Run.Planted != f.NeedsPlant:
		return f.Unreachable, []string{p + ": how the system recovers from a fault there, since it did not fire in this run (only that the window is absent)"}
	case r.Injection == spec.InjectSignal && !strings.HasPrefix(p, spec.NemesisPrefix):
		return f.How, []string{p + " (SIGKILL): " + f.CannotInfer}
	}
	cannot := []string{p + ": " + f.CannotInfer}
	if r.Injection == spec.InjectHook && spec.Killable(r.Point) {
		sim := f.Simulated
		if sim == "" {
			sim = "recovery from a process killed by a signal: the fault was simulated in-process, so no OS process died " +
				"and no connection was dropped by the kernel"
		}
		cannot = append(cannot, p+": "+sim)
	}
	return f.How, cannot
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

func orNone(s string) string {
	if s == "" {
		return "no feature"
	}
	return s
}

// proofNotRun lists what did not run: an interrupted run, the scenarios
// not run, the declared faults that did not fire (notFired), and the fault
// classes that no fault that fired covers (kill -9 actor by actor).
func proofNotRun(ev *Evidence, claims *ProofClaims, notFired []pair) ProofRow {
	row := ProofRow{Category: CategoryNotRun}
	if ev.Run.Interrupted {
		row.Had = append(row.Had, "NOT RUN: the run was interrupted before every selected scenario finished")
		row.CannotInfer = append(row.CannotInfer, "interrupted run: anything about the scenarios that did not finish")
	}
	ran := map[string]bool{}
	for _, sc := range ev.Scenarios {
		if sc.Status != StatusNotRun {
			ran[sc.ID] = true
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
	for _, p := range notFired {
		row.Had = append(row.Had, p.had)
		row.CannotInfer = append(row.CannotInfer, p.cannot)
	}
	fired := map[spec.Point]bool{}
	killed := map[string]bool{}
	if claims != nil {
		for _, c := range claims.Faults {
			if c.Fired > 0 && ran[c.Scenario] {
				fired[spec.Point(c.Point)] = true
				for _, a := range c.Killed {
					killed[a] = true
				}
			}
		}
	}
	for _, c := range spec.NotInjected {
		if slices.ContainsFunc(c.Covers, func(p spec.Point) bool { return fired[p] }) {
			continue
		}
		if c.Key == spec.ClassKill && len(killed) > 0 {
			var rest, done []string
			for _, a := range []string{spec.ActorOrders, spec.ActorRelay, spec.ActorConsumer} {
				if killed[a] {
					done = append(done, "the "+a)
				} else {
					rest = append(rest, "the "+a)
				}
			}
			if len(rest) == 0 {
				continue
			}
			row.Had = append(row.Had, fmt.Sprintf("NOT RUN: kill -9 of %s (SIGKILL mid-operation; only %s %s killed)",
				joinOr(rest), joinAnd(done), oneOrThese(len(done), "was", "were")))
			row.CannotInfer = append(row.CannotInfer, c.Label+": "+c.CannotInfer)
			continue
		}
		row.Had = append(row.Had, c.NotRun)
		row.CannotInfer = append(row.CannotInfer, c.Label+": "+c.CannotInfer)
	}
	return row
}
