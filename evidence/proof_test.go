package evidence

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func metrics(kv ...string) []Metric {
	var ms []Metric
	for i := 0; i+1 < len(kv); i += 2 {
		ms = append(ms, Metric{Name: kv[i], Value: kv[i+1]})
	}
	return ms
}

func TestComputeBoundaries(t *testing.T) {
	tx := Scenario{ID: "txBoundaryRollback", Suite: "U80", Boundary: BoundaryCommit, Status: StatusPass,
		Metrics: metrics("stock", "10", "idemRows", "0", "outboxRollback", "true", "seedUntouched", "true")}
	send := Scenario{ID: "sendBeforeMarkCrash", Suite: "U80", Boundary: BoundarySend, Status: StatusFail,
		Metrics: metrics("deliveries", "2", "businessEffects", "2", "oldTokenCas", "1", "state", "SENT")}
	ackNotRun := Scenario{ID: "offsetReplay", Suite: "U80", Boundary: BoundaryAck, Status: StatusNotRun,
		Metrics: metrics("replay", "1")}
	ackOtherSuite := Scenario{ID: "offsetReplay", Suite: "EXT", Boundary: BoundaryAck, Status: StatusPass,
		Metrics: metrics("replay", "1")}

	type want struct{ status, figures string }
	tests := []struct {
		name string
		scs  []Scenario
		want [3]want // commit, send, ack
	}{
		{
			name: "all absent",
			want: [3]want{{StatusNotRun, ""}, {StatusNotRun, ""}, {StatusNotRun, ""}},
		},
		{
			name: "pass fail and not run",
			scs:  []Scenario{ackNotRun, send, tx},
			want: [3]want{
				{StatusPass, "stock=10 idemRows=0 outboxRollback=true seedUntouched=true"},
				{StatusFail, "deliveries=2 businessEffects=2 oldTokenCas=1 state=SENT"},
				{StatusNotRun, ""},
			},
		},
		{
			name: "same id in another suite does not count",
			scs:  []Scenario{ackOtherSuite},
			want: [3]want{{StatusNotRun, ""}, {StatusNotRun, ""}, {StatusNotRun, ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComputeBoundaries(tt.scs)
			if len(got) != 3 {
				t.Fatalf("ComputeBoundaries: %d rows; want 3", len(got))
			}
			for i, b := range got {
				wantB := []string{BoundaryCommit, BoundarySend, BoundaryAck}[i]
				wantSc := []string{"txBoundaryRollback", "sendBeforeMarkCrash", "offsetReplay"}[i]
				if b.Boundary != wantB || b.Scenario != wantSc {
					t.Errorf("row %d = %s/%s; want %s/%s", i, b.Boundary, b.Scenario, wantB, wantSc)
				}
				if b.Status != tt.want[i].status || b.Figures != tt.want[i].figures {
					t.Errorf("row %s = %q %q; want %q %q", b.Boundary, b.Status, b.Figures, tt.want[i].status, tt.want[i].figures)
				}
				if b.Injection == "" || b.Recovery == "" || b.AcceptedWhen == "" {
					t.Errorf("row %s has an empty design text: %+v", b.Boundary, b)
				}
			}
		})
	}
	if got := ComputeBoundaries(nil)[1].Recovery; !strings.Contains(got, "stale mark hits 0 rows") {
		t.Errorf("send recovery = %q; want the design's text", got)
	}
}

// baseEvidence is a clean embedded-broker MariaDB run of the U80 suite with
// one NOT_RUN scenario.
func baseEvidence() *Evidence {
	start := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	ev := &Evidence{
		SchemaVersion: SchemaVersion,
		Tool:          Tool{Name: "orderflow-audit", Version: "v0.1.0", Revision: "abc123"},
		Run:           Run{ID: "r1", Start: start, End: start.Add(time.Minute), Args: []string{"run"}},
		Environment: Environment{
			Database: DatabaseEnv{Flavour: FlavourMariaDB, Version: "10.11.6-MariaDB-0+deb12u1", Isolation: "REPEATABLE-READ", DSN: "root@tcp(127.0.0.1:3306)/"},
			Kafka:    KafkaEnv{Mode: KafkaEmbedded, Implementation: "kfake v0.0.0 (franz-go in-process Kafka wire-protocol broker, not Apache Kafka)", Brokers: []string{"127.0.0.1:40123"}},
			Go:       "go1.26.0", OS: "linux", Arch: "amd64",
		},
		Scenarios: []Scenario{
			{ID: "txBoundaryRollback", Suite: "U80", Boundary: BoundaryCommit, Description: "unique conflict rolls back the order", FaultPoints: []string{"outbox-unique-conflict"}, Status: StatusPass, Metrics: metrics("stock", "10"), Line: "U80 txBoundaryRollback=PASS stock=10"},
			{ID: "sendBeforeMarkCrash", Suite: "U80", Boundary: BoundarySend, Description: "relay dies between publish and mark", FaultPoints: []string{"after-publish-before-mark"}, Status: StatusPass, Metrics: metrics("deliveries", "2"), Line: "U80 sendBeforeMarkCrash=PASS deliveries=2"},
			{ID: "offsetReplay", Suite: "U80", Boundary: BoundaryAck, Description: "consumer dies between effect and offset commit", FaultPoints: []string{"after-effect-before-offset-commit"}, Status: StatusPass, Metrics: metrics("replay", "1"), Line: "U80 offsetReplay=PASS replay=1"},
			{ID: "orderCrashWindow", Suite: "EXT", Boundary: BoundaryCommit, Description: "order committed, intent not yet written", FaultPoints: []string{"after-order-commit-before-outbox"}, Status: StatusNotRun, Reason: "reachable only with the planted bug outbox-outside-tx", Line: "EXT orderCrashWindow=NOT_RUN"},
		},
		Witness: &Witness{Missing: []string{"database: not captured in this test", "broker: not captured in this test"}},
	}
	for i := range ev.Scenarios {
		sc := &ev.Scenarios[i]
		if sc.Metrics == nil {
			sc.Metrics = []Metric{}
		}
		sc.Topics, sc.Logs, sc.Invariants, sc.Tables = []string{}, []LogRef{}, []InvariantResult{}, []TableDigest{}
	}
	return ev
}

// asDeclared claims that every declared fault of a scenario that ran
// fired once, and that a signal killed its actor when actors ran as
// processes: a clean run's claims.
func asDeclared(ev *Evidence) *ProofClaims {
	c := &ProofClaims{Faults: []FaultClaim{}}
	for _, sc := range ev.Scenarios {
		if sc.Status == StatusNotRun {
			continue
		}
		for _, p := range sc.FaultPoints {
			f := FaultClaim{Scenario: sc.ID, Point: p, Fired: 1, Killed: []string{}}
			if sc.ID == "relayKill9" && ev.Environment.ActorProcesses {
				f.Killed = []string{"relay"}
			}
			c.Faults = append(c.Faults, f)
		}
	}
	return c
}

func joined(xs []string) string { return strings.Join(xs, "\n") }

func TestRenderProofBoundary(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Evidence)
		// claims are the run's claims; nil: every declared fault of a
		// scenario that ran fired once (asDeclared).
		claims func(*Evidence) *ProofClaims
		// substrings that must (or must not) appear, by category and
		// column ("had" or "cannot").
		want    map[string][]string
		notWant map[string][]string
	}{
		{
			name: "embedded kfake and MariaDB",
			want: map[string][]string{
				CategoryReal + "/had":      {"MariaDB 10.11.6-MariaDB-0+deb12u1", "REPEATABLE-READ", "embedded in-process broker at 127.0.0.1:40123", "kfake"},
				CategoryReal + "/cannot":   {"kfake is not Apache Kafka broker code", "replication, ISR, acks=all durability and partition leadership changes", "is not MySQL 8.4", "LONGTEXT", "not normalised", "MySQL was not tested"},
				CategoryFaults + "/had":    {"outbox-unique-conflict (in txBoundaryRollback), once: a real database error", "after-publish-before-mark (in sendBeforeMarkCrash), once", "expired its lease by SQL", "after-effect-before-offset-commit (in offsetReplay), once"},
				CategoryFaults + "/cannot": {"a lease expired by SQL after an in-process crash is not a relay process killed by a signal"},
				CategoryNotRun + "/had":    {"NOT RUN: scenario orderCrashWindow (EXT, boundary commit): reachable only with the planted bug", "NOT RUN: kill -9 of an actor", "NOT RUN: producer unknown outcome", "NOT RUN: broker restart", "NOT RUN: database crash", "NOT RUN: network partition", "NOT RUN: dead-letter routing"},
				CategorySynthetic + "/had": {"HS256", "generated SKUs", "JSON payload shape", "stand-in for a real downstream service"},
			},
			notWant: map[string][]string{
				CategoryFaults + "/had": {"NEGATIVE CONTROL", "after-order-commit-before-outbox", "SIGKILL"},
				CategoryReal + "/had":   {"orderCrashWindow"},
				CategoryNotRun + "/had": {"PASS", "passed"},
			},
		},
		{
			name: "private database server",
			modify: func(ev *Evidence) {
				ev.Environment.Database.Mode = DatabasePrivate
				ev.Environment.Database.DSN = "root@tcp(127.0.0.1:41234)/"
			},
			want: map[string][]string{
				CategoryReal + "/had":    {"a private mariadbd that the run started for itself"},
				CategoryReal + "/cannot": {"a production server's configuration"},
			},
			notWant: map[string][]string{CategoryReal + "/had": {"external server"}},
		},
		{
			name: "external database server named",
			modify: func(ev *Evidence) {
				ev.Environment.Database.Mode = DatabaseExternal
				ev.Environment.Database.DSN = "app:xxxxx@tcp(db.internal:3306)/"
			},
			want: map[string][]string{CategoryReal + "/had": {"an external server named by the user (app:xxxxx@tcp(db.internal:3306)/)"}},
			notWant: map[string][]string{
				CategoryReal + "/had":    {"private mariadbd"},
				CategoryReal + "/cannot": {"a production server's configuration"},
			},
		},
		{
			name: "database and kfake broker in containers",
			modify: func(ev *Evidence) {
				ev.Environment.Database.Mode = DatabaseContainer
				ev.Environment.Database.Container = &ContainerEnv{Image: "local/mariadb:10.11", ImageID: "sha256:" + strings.Repeat("a", 64),
					RepoDigests: []string{}, Engine: "Docker 20.10.24"}
				ev.Environment.Kafka = KafkaEnv{Mode: KafkaContainer, Implementation: "kfake v1 (not Apache Kafka)", Brokers: []string{"127.0.0.1:40001"},
					Container: &ContainerEnv{Image: "local/broker", ImageID: "sha256:" + strings.Repeat("b", 64), RepoDigests: []string{}, Engine: "Docker 20.10.24"}}
			},
			want: map[string][]string{
				CategoryReal + "/had": {"in a container that the run started for itself (image local/mariadb:10.11, id sha256:aaaa",
					"built locally, no registry digest; Docker 20.10.24 through testcontainers-go; binary log on",
					"broker in a container that the run started for itself (image local/broker, id sha256:bbbb", "at 127.0.0.1:40001: kfake v1"},
				CategoryReal + "/cannot": {"kfake is not Apache Kafka broker code", "the container ran with the image's defaults"},
			},
			notWant: map[string][]string{
				CategoryReal + "/had":    {"private mariadbd", "external server"},
				CategoryReal + "/cannot": {"a single broker node", "which broker software served the run"},
			},
		},
		{
			name: "MySQL 8.4 and Apache Kafka in containers from a registry",
			modify: func(ev *Evidence) {
				ev.Environment.Database.Flavour, ev.Environment.Database.Version = FlavourMySQL, "8.4.6"
				ev.Environment.Database.Mode = DatabaseContainer
				ev.Environment.Database.Container = &ContainerEnv{Image: "mysql:8.4", ImageID: "sha256:" + strings.Repeat("c", 64),
					RepoDigests: []string{"mysql@sha256:" + strings.Repeat("d", 64)}, Engine: "Docker 27.0.1"}
				ev.Environment.Kafka = KafkaEnv{Mode: KafkaContainer, Implementation: "Apache Kafka, as the image apache/kafka:4.1.0 is named",
					Brokers: []string{"127.0.0.1:40002"}, Container: &ContainerEnv{Image: "apache/kafka:4.1.0",
						ImageID: "sha256:" + strings.Repeat("e", 64), RepoDigests: []string{"apache/kafka@sha256:" + strings.Repeat("f", 64)}, Engine: "Docker 27.0.1"}}
			},
			want: map[string][]string{
				CategoryReal + "/had": {"MySQL 8.4.6", "registry digest mysql@sha256:dddd", "registry digest apache/kafka@sha256:ffff",
					"Apache Kafka, as the image apache/kafka:4.1.0 is named"},
				CategoryReal + "/cannot": {"which broker software served the run beyond the image's name and digest",
					"a single broker node held the only replica", "MariaDB was not tested"},
			},
			notWant: map[string][]string{CategoryReal + "/cannot": {"kfake is not Apache Kafka", "MySQL 8.4 behaviour"}},
		},
		{
			name: "external broker and MySQL 8.4",
			modify: func(ev *Evidence) {
				ev.Environment.Kafka = KafkaEnv{Mode: KafkaExternal, Implementation: "external Kafka cluster (implementation not verified)", Brokers: []string{"kafka-1:9092", "kafka-2:9092"}}
				ev.Environment.Database.Flavour, ev.Environment.Database.Version = FlavourMySQL, "8.4.3"
			},
			want: map[string][]string{
				CategoryReal + "/had":    {"external Kafka at kafka-1:9092, kafka-2:9092", "MySQL 8.4.3"},
				CategoryReal + "/cannot": {"the tool did not verify it", "MariaDB was not tested", "replication, ISR, acks=all"},
			},
			notWant: map[string][]string{
				CategoryReal + "/cannot": {"kfake", "is not MySQL 8.4", "MySQL 8.4 behaviour"},
				CategoryReal + "/had":    {"embedded"},
			},
		},
		{
			name: "MySQL 8.0 is not 8.4",
			modify: func(ev *Evidence) {
				ev.Environment.Database.Flavour, ev.Environment.Database.Version = FlavourMySQL, "8.0.36"
			},
			want: map[string][]string{CategoryReal + "/cannot": {"MySQL 8.4 behaviour: the server was MySQL 8.0.36", "MariaDB was not tested"}},
		},
		{
			name:   "planted run is a negative control",
			modify: func(ev *Evidence) { ev.Run.Planted = "mark-without-token" },
			want: map[string][]string{
				CategoryFaults + "/had":    {`NEGATIVE CONTROL: the bug "mark-without-token" was planted`},
				CategoryFaults + "/cannot": {"not evidence that the clean design holds"},
			},
		},
		{
			name: "sigkill without actor processes stays simulated",
			modify: func(ev *Evidence) {
				ev.Scenarios = append(ev.Scenarios, Scenario{ID: "relayKill9", Suite: "EXT", Boundary: BoundarySend,
					FaultPoints: []string{"after-publish-before-mark"}, Status: StatusPass,
					Metrics: []Metric{}, Line: "EXT relayKill9=PASS", Topics: []string{}, Logs: []LogRef{}, Invariants: []InvariantResult{}, Tables: []TableDigest{}})
			},
			want: map[string][]string{
				CategoryFaults + "/had":    {"in-process simulated crash", "SIGKILL declared in relayKill9, but the evidence says no actor ran as an OS process"},
				CategoryFaults + "/cannot": {"not a relay process killed by a signal"},
				CategoryNotRun + "/had":    {"NOT RUN: kill -9 of an actor"},
			},
			notWant: map[string][]string{CategoryFaults + "/had": {"killed with SIGKILL"}},
		},
		{
			name: "relay killed as a process next to the simulated crash",
			modify: func(ev *Evidence) {
				ev.Environment.ActorProcesses = true
				ev.Scenarios = append(ev.Scenarios, Scenario{ID: "relayKill9", Suite: "EXT", Boundary: BoundarySend,
					FaultPoints: []string{"after-publish-before-mark"}, Status: StatusPass,
					Metrics: []Metric{}, Line: "EXT relayKill9=PASS", Topics: []string{}, Logs: []LogRef{}, Invariants: []InvariantResult{}, Tables: []TableDigest{}})
			},
			want: map[string][]string{
				CategoryReal + "/had":      {"separate OS processes"},
				CategoryFaults + "/had":    {"after-publish-before-mark (in relayKill9), once: the relay ran as its own OS process and was killed with SIGKILL", "after-publish-before-mark (in sendBeforeMarkCrash), once: the relay abandoned its work"},
				CategoryFaults + "/cannot": {"after-publish-before-mark (SIGKILL): a lease that runs out while the old relay is still alive", "after-publish-before-mark: a lease expired by SQL after an in-process crash is not a relay process killed by a signal"},
				CategoryNotRun + "/had":    {"NOT RUN: kill -9 of the order service or the consumer (SIGKILL mid-operation; only the relay was killed)"},
			},
			notWant: map[string][]string{
				CategoryNotRun + "/had": {"kill -9 of an actor"},
				CategoryFaults + "/had": {"sigkill (in"},
			},
		},
		{
			name: "broker faults cover the producer's unknown outcome",
			modify: func(ev *Evidence) {
				ev.Scenarios = append(ev.Scenarios, Scenario{ID: "publishFailures", Suite: "EXT", Boundary: BoundarySend,
					FaultPoints: []string{"publish-refused", "publish-timeout", "publish-ack-lost"}, Status: StatusPass,
					Metrics: []Metric{}, Line: "EXT publishFailures=PASS", Topics: []string{}, Logs: []LogRef{}, Invariants: []InvariantResult{}, Tables: []TableDigest{}})
			},
			want: map[string][]string{
				CategoryFaults + "/had": {"publish-refused (in publishFailures), once: the embedded broker answered INVALID_RECORD",
					"publish-timeout (in publishFailures), once: the embedded broker read the produce request", "publish-ack-lost (in publishFailures), once: the embedded broker appended the record"},
				CategoryFaults + "/cannot": {"publish-ack-lost: replication-level causes of an unknown outcome"},
				CategoryNotRun + "/had":    {"NOT RUN: broker restart"},
			},
			notWant: map[string][]string{CategoryNotRun + "/had": {"producer unknown outcome"}},
		},
		{
			name: "a scenario that did not run declares nothing",
			modify: func(ev *Evidence) {
				for i := range ev.Scenarios {
					ev.Scenarios[i].Status = StatusNotRun
				}
			},
			want: map[string][]string{
				CategoryReal + "/had":      {"no scenario ran"},
				CategoryFaults + "/had":    {"no fault fired in the scenarios that ran"},
				CategorySynthetic + "/had": {"none: no scenario ran"},
				CategoryNotRun + "/had":    {"NOT RUN: scenario txBoundaryRollback", "NOT RUN: scenario offsetReplay"},
			},
			notWant: map[string][]string{CategoryFaults + "/had": {"outbox-unique-conflict"}},
		},
		{
			name: "order crash window armed in a clean run cannot fire",
			modify: func(ev *Evidence) {
				ev.Scenarios[3].Status = StatusPass
			},
			// It cannot fire: the logs show no fault, and the claims say so.
			claims: func(ev *Evidence) *ProofClaims {
				c := asDeclared(ev)
				c.Faults[len(c.Faults)-1].Fired = 0
				return c
			},
			want: map[string][]string{
				CategoryNotRun + "/had":    {"NOT RUN: after-order-commit-before-outbox (in orderCrashWindow): armed in the order service", "cannot fire in this run"},
				CategoryNotRun + "/cannot": {"after-order-commit-before-outbox: how the system recovers from a fault there"},
			},
			notWant: map[string][]string{CategoryFaults + "/had": {"after-order-commit-before-outbox"}},
		},
		{
			name: "order crash window fires with its planted bug",
			modify: func(ev *Evidence) {
				ev.Scenarios[3].Status = StatusFail
				ev.Scenarios[3].Reason = "ordersWithoutIntent=1, want 0"
				ev.Run.Planted = "outbox-outside-tx"
			},
			want: map[string][]string{
				CategoryFaults + "/had": {"after-order-commit-before-outbox (in orderCrashWindow), once: the order service stopped after the order committed", "NEGATIVE CONTROL"},
			},
			notWant: map[string][]string{CategoryFaults + "/had": {"cannot fire"}},
		},
		{
			name:   "interrupted run",
			modify: func(ev *Evidence) { ev.Run.Interrupted = true },
			want:   map[string][]string{CategoryNotRun + "/had": {"NOT RUN: the run was interrupted"}},
		},
		{
			name: "unknown fault point",
			modify: func(ev *Evidence) {
				ev.Scenarios[0].FaultPoints = []string{"zz-new-point"}
			},
			want: map[string][]string{CategoryFaults + "/had": {"zz-new-point (in txBoundaryRollback), once: a fault point this tool version does not describe"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := baseEvidence()
			if tt.modify != nil {
				tt.modify(ev)
			}
			claims := asDeclared(ev)
			if tt.claims != nil {
				claims = tt.claims(ev)
			}
			rows := RenderProofBoundary(ev, claims)
			cats := []string{CategoryReal, CategoryFaults, CategorySynthetic, CategoryNotRun}
			if len(rows) != len(cats) {
				t.Fatalf("ComputeProofBoundary: %d rows; want %d", len(rows), len(cats))
			}
			text := map[string]string{}
			for i, r := range rows {
				if r.Category != cats[i] {
					t.Errorf("row %d category %q; want %q", i, r.Category, cats[i])
				}
				text[r.Category+"/had"] = joined(r.Had)
				text[r.Category+"/cannot"] = joined(r.CannotInfer)
			}
			for k, subs := range tt.want {
				for _, s := range subs {
					if !strings.Contains(text[k], s) {
						t.Errorf("%s lacks %q; got:\n%s", k, s, text[k])
					}
				}
			}
			for k, subs := range tt.notWant {
				for _, s := range subs {
					if strings.Contains(text[k], s) {
						t.Errorf("%s contains %q; got:\n%s", k, s, text[k])
					}
				}
			}
			for _, h := range rows[3].Had {
				if !strings.HasPrefix(h, "NOT RUN: ") {
					t.Errorf("not-run entry %q does not start with NOT RUN", h)
				}
			}
			if again := RenderProofBoundary(ev, claims); !reflect.DeepEqual(rows, again) {
				t.Errorf("RenderProofBoundary is not deterministic")
			}
			// The computed tables must fit the evidence schema.
			ev.Boundaries = ComputeBoundaries(ev.Scenarios)
			ev.ProofBoundary = rows
			ev.Summary = Summarize(ev.Scenarios)
			if _, err := Marshal(ev); err != nil {
				t.Errorf("Marshal with computed tables: %v", err)
			}
		})
	}
}

func TestComputeProofBoundaryFitsSchemaLimits(t *testing.T) {
	ev := baseEvidence()
	for i := range 100 {
		ev.Scenarios = append(ev.Scenarios, Scenario{
			ID: fmt.Sprintf("notRun%03d", i), Suite: "EXT", Boundary: BoundaryNone, Status: StatusNotRun,
			Description: strings.Repeat("d", 4090), Line: "EXT x=NOT_RUN",
			FaultPoints: []string{}, Metrics: []Metric{}, Topics: []string{}, Logs: []LogRef{}, Invariants: []InvariantResult{}, Tables: []TableDigest{},
		})
	}
	rows := RenderProofBoundary(ev, asDeclared(ev))
	nr := rows[3]
	if len(nr.Had) != maxProofItems || len(nr.CannotInfer) != maxProofItems {
		t.Fatalf("not run: %d had, %d cannot; want %d each", len(nr.Had), len(nr.CannotInfer), maxProofItems)
	}
	if last := nr.Had[len(nr.Had)-1]; !strings.Contains(last, "more entries not shown") {
		t.Errorf("last entry %q does not say how many were folded", last)
	}
	ev.Boundaries = ComputeBoundaries(ev.Scenarios)
	ev.ProofBoundary = rows
	ev.Summary = Summarize(ev.Scenarios)
	if _, err := Marshal(ev); err != nil {
		t.Errorf("Marshal: %v", err)
	}
}

// TestProofBoundaryWitnesses: the matrix says which witnesses the bundle
// holds, and lists every missing one as unwitnessed.
func TestProofBoundaryWitnesses(t *testing.T) {
	ev := baseEvidence()
	real := RenderProofBoundary(ev, asDeclared(ev))[0]
	if got := strings.Count(strings.Join(real.CannotInfer, "\n"), "unwitnessed: "); got != 2 {
		t.Errorf("%d unwitnessed entries; want 2: %q", got, real.CannotInfer)
	}
	if slices.ContainsFunc(real.Had, func(s string) bool { return strings.HasPrefix(s, "witnesses in the bundle") }) {
		t.Errorf("had lists witnesses the evidence lacks: %q", real.Had)
	}
	ev.Witness = &Witness{Missing: []string{"broker: lost"}, Database: &DatabaseWitness{Source: WitnessBinlogFiles,
		ServerVersion: "10.11.6-MariaDB-log", ServerID: 1, GTIDEnd: "0-1-40", Files: []WitnessFile{{Path: "u80/witness/db/binlog.000001"}}}}
	real = RenderProofBoundary(ev, asDeclared(ev))[0]
	had := strings.Join(real.Had, "\n")
	cannot := strings.Join(real.CannotInfer, "\n")
	for _, want := range []string{"witnesses in the bundle: the database's binary log (binlog-files of 10.11.6-MariaDB-log, server id 1, GTIDs from its start to 0-1-40, 1 file(s))"} {
		if !strings.Contains(had, want) {
			t.Errorf("had lacks %q: %s", want, had)
		}
	}
	if !strings.Contains(cannot, "unwitnessed: what the actors say about the broker (lost) rests on their logs alone") ||
		strings.Contains(cannot, "about the database") || strings.Contains(had, "broker's own log") {
		t.Errorf("cannot infer %q, had %q; want the broker alone unwitnessed", cannot, had)
	}
	ev.Witness = nil
	if c := strings.Join(RenderProofBoundary(ev, asDeclared(ev))[0].CannotInfer, "\n"); !strings.Contains(c, "unwitnessed: every claim") {
		t.Errorf("no witness object: cannot infer %q", c)
	}
}
