package spec

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The chaos scenario: a seeded random schedule of faults under concurrent
// load, every actor its own OS process, healed and then checked
// (docs/scenarios.md, "chaos"). It is opt-in: `run --scenarios chaos`, or
// `orderflow-audit explore`, which runs it once per seed.

// ChaosInboxes are the inbox consumer names of the chaos scenario's n
// consumer groups (run --inboxes n; n below 1 is 1): the first group's
// inbox is notifier, the i-th's ledger-projection-<i>, longer than 16
// characters. Each group writes its own inbox and notification rows and
// owes its own effect of every event.
func ChaosInboxes(n int) []string {
	out := []string{"notifier"}
	for i := 2; i <= n; i++ {
		out = append(out, "ledger-projection-"+strconv.Itoa(i))
	}
	return out
}

// The nemesis's fault points: one per kind of fault (runner/nemesis.Kind,
// the name --faults takes, with this prefix). Unlike the scripted points
// they are not places in an actor's code: the nemesis strikes at a moment
// of its schedule, wherever the actor is.
const (
	NemesisKill           Point = "nemesis-kill"
	NemesisPause          Point = "nemesis-pause"
	NemesisProduceRefused Point = "nemesis-produce-refused"
	NemesisProduceTimeout Point = "nemesis-produce-timeout"
	NemesisAckLost        Point = "nemesis-ack-lost"
	NemesisFetchError     Point = "nemesis-fetch-error"
	NemesisRebalance      Point = "nemesis-rebalance"
	NemesisBrokerRestart  Point = "nemesis-broker-restart"
	NemesisConnKill       Point = "nemesis-conn-kill"
	NemesisDBCrash        Point = "nemesis-db-crash"
	NemesisLatency        Point = "nemesis-latency"
	NemesisNetCut         Point = "nemesis-net-cut"
)

// NemesisPrefix starts every nemesis point: the point of a fault kind is
// NemesisPrefix + kind.
const NemesisPrefix = "nemesis-"

// More ways a fault is brought about.
const (
	// InjectRestart: a component of the infrastructure is stopped and
	// started again.
	InjectRestart Injection = "restart"
	// InjectNetwork: a TCP proxy between an actor and the database or the
	// broker delays or cuts the traffic.
	InjectNetwork Injection = "network proxy"
)

// ActorInfra names the infrastructure (database, broker) in the fault
// table.
const ActorInfra = "infrastructure"

var chaosScenarios = []Scenario{{
	ID: "chaos", Consumes: true, Suite: SuiteEXT, Boundary: BoundaryNone, OptIn: true,
	Faults: refs(chaosFaults),
	Description: "N orders from several users placed concurrently over HTTP through the order service, R relays and C " +
		"consumers of one group (of each of --inboxes groups), each its own OS process, while a nemesis applies a seeded random schedule of faults " +
		"(--faults); then every fault is healed and the chain left to settle: every committed event has exactly one " +
		"effect (of each group's inbox) and the lag is 0. The schedule and the request order follow from the seed; the OS scheduler and the " +
		"network (which relay claims what, how requests interleave, where a kill lands) do not, and are recorded as they happened",
	Details: "not in the default selection (`--scenarios chaos`, or `explore`); every actor is a supervised process " +
		"behind TCP proxies; the faults are kill, pause, broker faults and restart, connection kill, database crash, " +
		"latency and cuts (see [chaos.md](chaos.md)); with `--inboxes 2` a second group of C consumers (inbox " +
		"ledger-projection-2) runs beside the first, and each inbox is held to one effect per event; beside the N orders " +
		"the generated, model-checked load of generatedLoad runs at a larger size (--gen-rounds, default 100 rounds of " +
		"one request of each of 6 users, seeded with the run's seed, spread over --duration), held to the contract's " +
		"reference model (answer-off-contract, write-off-contract) with the outcome of a request that got no answer, or " +
		"a 5xx, kept unknown; the chain settles only after it ended",
	Metrics: []Metric{
		{Name: "orders", Means: "orders committed"},
		{Name: "events", Means: "outbox intents"},
		{Name: "deliveries", Means: "receive events (every delivery, replays included)"},
		{Name: "duplicatesAbsorbed", Means: "`inbox_reject` events"},
		{Name: "effects", Means: "distinct effects"},
		{Name: "missing", Accept: "0",
			Means: "intents without an effect, counted per inbox consumer (liveness after healing): runner, per inbox of " +
				"the run's groups; verifier, per inbox the run's selection declares or an event names"},
		{Name: "lag", Accept: "0",
			Means: "summed over the groups that received records: over the partitions a record was seen on (published or " +
				"received), the end (highest offset + 1) minus the group's last committed offset"},
		{Name: "faults", Means: "the nemesis's faults by kind, `kind:n+kind:n` in the fault table's order (`none` without any)"},
		{Name: "unknownResolved",
			Means: "outcomes unknown to the actor that met them and settled by what happened after / all of them: " +
				"publishes whose outcome the records received settle, effect commits a later inbox decision of their row settles"},
	},
	Also: "the chain settled within 30 s of the heal and every request got a final answer; a PASS without any fault " +
		"is inconclusive (`scenario-not-exercised`)",
	Needs: []Feature{FeatureProcesses, FeatureOrderService, FeatureClaimTokens},
}}

var chaosFaults = []Fault{
	{
		FaultRef: FaultRef{NemesisKill, InjectSignal}, Actor: ActorRelay + ", " + ActorConsumer + ", " + ActorOrders,
		Simulates: "a process of the pipeline that dies at an arbitrary moment (OOM killer, node loss, kill -9)",
		How: "the nemesis sent SIGKILL to a relay, consumer or order-service process at a moment of its schedule, " +
			"wherever it was, and the supervisor started it again (same name, a new log)",
		CannotInfer: "the moment within an operation is not chosen: a run shows the kills its schedule happened to land; " +
			"an action the process completed but had not logged when it died is an unknown outcome for the witnesses to settle",
	},
	{
		FaultRef: FaultRef{NemesisPause, InjectSignal}, Actor: ActorRelay,
		Simulates: "a relay stalled past its lease (a GC pause, a VM freeze) that wakes up and goes on",
		How: "the nemesis sent SIGSTOP to a relay for longer than its lease, then SIGCONT: its claims were taken over " +
			"meanwhile, and its marks must hit 0 rows",
		CannotInfer: "a stall shorter than the lease, and a relay that renews its lease, were not exercised",
	},
	{
		FaultRef: FaultRef{NemesisProduceRefused, InjectBroker}, Actor: ActorRelay,
		Simulates: "a broker that refuses records for a while",
		How:       "the embedded broker answered INVALID_RECORD to every produce request on the topic for a while (kfake Fault)",
		CannotInfer: "a refusal of one record among others in a batch, and refusals for reasons other than the one " +
			"answered",
	},
	{
		FaultRef: FaultRef{NemesisProduceTimeout, InjectBroker}, Actor: ActorRelay,
		Simulates: "a broker that stops answering produce requests for a while",
		How: "the embedded broker read every produce request and left it unanswered and unappended for a while " +
			"(kfake ControlKey on Produce; the scenario's relays are the only producers)",
		CannotInfer: "a request the broker appends after the relay gave up on it",
	},
	{
		FaultRef: FaultRef{NemesisAckLost, InjectBroker}, Actor: ActorRelay,
		Simulates: "a broker that appends records and loses the acknowledgements for a while",
		How: "the embedded broker appended the records of the produce requests on the topic and answered them " +
			"REQUEST_TIMED_OUT for a while (kfake Fault, applied after the append)",
		CannotInfer: "replication-level causes of an unknown outcome: one broker holds the only replica",
	},
	{
		FaultRef: FaultRef{NemesisFetchError, InjectBroker}, Actor: ActorConsumer,
		Simulates:   "a broker whose fetches fail for a while (a leader moving, a disk error)",
		How:         "the embedded broker answered the consumers' fetch requests on the topic with an error for a while (kfake Fault)",
		CannotInfer: "a fetch that returns corrupt or partial batches",
	},
	{
		FaultRef: FaultRef{NemesisRebalance, InjectBroker}, Actor: ActorConsumer,
		Simulates: "a consumer-group rebalance in the middle of a batch",
		How: "the embedded broker's group coordinator answered the members' heartbeats REBALANCE_IN_PROGRESS for a while, " +
			"so that every member rejoined and the partitions were assigned again (kfake Fault)",
		CannotInfer: "a member that keeps processing after it lost its partitions (no fencing of the effect transaction by " +
			"the group generation is claimed or checked)",
	},
	{
		FaultRef: FaultRef{NemesisBrokerRestart, InjectRestart}, Actor: ActorInfra,
		Simulates: "a broker restart",
		How: "the embedded broker was closed (writing its state into its data directory) and started again on the same data " +
			"directory and port; records and group offsets survive, every connection was dropped",
		CannotInfer: "a broker crash without a clean close (kfake persists at close), and leader elections among replicas",
	},
	{
		FaultRef: FaultRef{NemesisConnKill, InjectSQL}, Actor: ActorRelay + ", " + ActorConsumer,
		Simulates: "a database connection that dies in the middle of a transaction or its COMMIT",
		How: "the nemesis ran KILL CONNECTION on a connection of the scenario's database that had a transaction open " +
			"(information_schema.INNODB_TRX), whoever held it",
		CannotInfer: "which statement was interrupted is whatever the connection was doing at that moment; a COMMIT is hit " +
			"only by chance",
	},
	{
		FaultRef: FaultRef{NemesisDBCrash, InjectSignal}, Actor: ActorInfra,
		Simulates: "a database server crash",
		How: "the private mariadbd was killed with SIGKILL and started again on its data directory (InnoDB crash recovery); " +
			"every connection was dropped",
		CannotInfer: "a crash of the machine (lost page cache, torn writes): the kernel kept what the server had written",
	},
	{
		FaultRef: FaultRef{NemesisLatency, InjectNetwork}, Actor: ActorRelay + ", " + ActorConsumer + ", " + ActorOrders,
		Simulates: "a slow network between an actor and the database or the broker",
		How: "a TCP proxy in the run's process (Shopify toxiproxy as a library) delayed every packet of the link for a " +
			"while",
		CannotInfer: "packet loss and reordering (TCP hides them)",
	},
	{
		FaultRef: FaultRef{NemesisNetCut, InjectNetwork}, Actor: ActorRelay + ", " + ActorConsumer + ", " + ActorOrders,
		Simulates: "a network partition between an actor and the database or the broker",
		How: "the TCP proxy of the link dropped its connections and refused new ones for a while, then let them through " +
			"again",
		CannotInfer: "a one-way partition, and a cut that leaves connections half open (here both sides see the close)",
	},
}

// refs returns the rows' references, in order.
func refs(faults []Fault) []FaultRef {
	out := make([]FaultRef, len(faults))
	for i, f := range faults {
		out[i] = f.FaultRef
	}
	return out
}

// NemesisKinds returns the nemesis's fault kinds in fault-table order: each
// point without NemesisPrefix (the names --faults takes).
func NemesisKinds() []string {
	out := make([]string, len(chaosFaults))
	for i, f := range chaosFaults {
		out[i] = strings.TrimPrefix(string(f.Point), NemesisPrefix)
	}
	return out
}

// FormatFaultCounts renders faults by kind as the chaos scenario's faults
// metric: "kind:n+kind:n" in NemesisKinds order, then kinds not among
// them (the audit's commit-lost) by name, kinds without a fault left out,
// "none" when there is none.
func FormatFaultCounts(counts map[string]int) string {
	var parts []string
	known := NemesisKinds()
	for _, k := range known {
		if n := counts[k]; n > 0 {
			parts = append(parts, k+":"+strconv.Itoa(n))
		}
	}
	// Kinds of the black-box audit only (commit-lost), after, by name.
	var other []string
	for k, n := range counts {
		if n > 0 && !slices.Contains(known, k) {
			other = append(other, k)
		}
	}
	sort.Strings(other)
	for _, k := range other {
		parts = append(parts, k+":"+strconv.Itoa(counts[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}
