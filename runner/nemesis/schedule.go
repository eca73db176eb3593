// Package nemesis plans the chaos scenario: a seeded schedule of faults
// and the order of the requests of its load, both pure functions of the
// seed and the flags, so that the same seed gives the same schedule and
// the same request order.
//
// It imports nothing of the runner: what a fault does, and to which
// process, link or server, is the chaos engine's (runner/chaos); what is
// planned, and when, is decided here.
package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is a kind of fault the nemesis can inject.
type Kind string

// The kinds, with the name --faults takes.
const (
	// Kill: SIGKILL of a relay, a consumer or the order service process;
	// the supervisor restarts it.
	Kill Kind = "kill"
	// Pause: a relay stopped for longer than its lease, then SIGCONT (a
	// zombie that wakes up holding stale tokens): aimed, it stops itself
	// between its publish and its mark; unaimed, SIGSTOP.
	Pause Kind = "pause"
	// ProduceRefused: the broker refuses produce requests (INVALID_RECORD)
	// for a while.
	ProduceRefused Kind = "produce-refused"
	// ProduceTimeout: the broker leaves produce requests unanswered for a
	// while.
	ProduceTimeout Kind = "produce-timeout"
	// AckLost: the broker appends records and answers REQUEST_TIMED_OUT.
	AckLost Kind = "ack-lost"
	// FetchError: the broker fails fetch requests for a while.
	FetchError Kind = "fetch-error"
	// Rebalance: the group coordinator answers heartbeats
	// REBALANCE_IN_PROGRESS: every member rejoins.
	Rebalance Kind = "rebalance"
	// BrokerRestart: the broker is closed and started again on its data
	// directory and port.
	BrokerRestart Kind = "broker-restart"
	// ConnKill: the database connection of a relay, a consumer or the
	// order service dies inside a transaction: aimed, the actor stops
	// itself inside one (the relay's claim, the consumer's effect before
	// its COMMIT, the order before its intent) and its connections are
	// dropped; unaimed, KILL CONNECTION of a connection in a transaction.
	ConnKill Kind = "conn-kill"
	// DBCrash: kill -9 of the private database server, then a restart on
	// its data directory (InnoDB crash recovery).
	DBCrash Kind = "db-crash"
	// Latency: the proxy between an actor and the database or the broker
	// delays every packet.
	Latency Kind = "latency"
	// NetCut: the proxy between an actor and the database or the broker
	// drops its connections and refuses new ones for a while.
	NetCut Kind = "net-cut"
	// CommitLost (the black-box audit's only, not in Kinds): the proxy
	// between a role and the database drops every COMMIT the role sends
	// for a while, closing its connection instead: the server rolls the
	// transaction back, and the role cannot know (an unknown outcome).
	CommitLost Kind = "commit-lost"
)

// Kinds lists every kind, in the order --faults documents them.
var Kinds = []Kind{Kill, Pause, ProduceRefused, ProduceTimeout, AckLost, FetchError, Rebalance,
	BrokerRestart, ConnKill, DBCrash, Latency, NetCut}

// ParseKinds parses a comma-separated list of kinds ("" or "all": every
// kind). An unknown or repeated kind is an error naming the valid ones.
func ParseKinds(s string) ([]Kind, error) {
	if s == "" || s == "all" {
		return slices.Clone(Kinds), nil
	}
	return ParseKindsOf(s, Kinds)
}

// ParseKindsOf parses a comma-separated list of kinds, each of valid; an
// unknown or repeated kind is an error naming the valid ones.
func ParseKindsOf(s string, valid []Kind) ([]Kind, error) {
	var out []Kind
	for _, part := range strings.Split(s, ",") {
		k := Kind(strings.TrimSpace(part))
		switch {
		case k == "":
			return nil, fmt.Errorf("empty fault kind in %q", s)
		case !slices.Contains(valid, k):
			return nil, fmt.Errorf("unknown fault kind %q (valid: %s)", k, joinKinds(valid))
		case slices.Contains(out, k):
			return nil, fmt.Errorf("fault kind %q given twice", k)
		}
		out = append(out, k)
	}
	return out, nil
}

// KindList is the kinds joined with commas.
func KindList() string { return joinKinds(Kinds) }

func joinKinds(ks []Kind) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = string(k)
	}
	return strings.Join(parts, ",")
}

// Defaults of Config.
const (
	DefaultDuration  = 4 * time.Second
	DefaultOrders    = 40
	DefaultRelays    = 2
	DefaultConsumers = 2
	DefaultUsers     = 4
	// DefaultEvery is the mean time between two faults when Config.Count
	// is not set.
	DefaultEvery = 700 * time.Millisecond
)

// Config is what a schedule and a load are generated from.
type Config struct {
	Seed      int64
	Duration  time.Duration
	Orders    int
	Relays    int
	Consumers int
	// Inboxes is how many consumer groups of Consumers members each run,
	// each with an inbox of its own (spec.ChaosInboxes); default 1.
	Inboxes int
	// Users place the orders (principals user-1 ... user-N).
	Users int
	// GenRounds is the size of the generated, model-checked load that
	// runs beside the orders (runner/genload, seeded with Seed): rounds of
	// one request of each of its users (default DefaultGenRounds).
	GenRounds int
	// Kinds are the fault kinds that may be drawn (default: all).
	Kinds []Kind
	// Only keeps the faults with these 1-based numbers of the generated
	// schedule (empty: all of them; NoFaults: none); shrinking uses it.
	Only []int
	// Plan, when set, is the schedule instead of the seed's (tests that
	// need every kind of fault in one run); Only and Duration still apply.
	// No flag sets it: a run with a plan cannot be replayed by flags.
	Plan []Fault
}

// SetDefaults fills the zero fields.
func (c *Config) SetDefaults() {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.Orders <= 0 {
		c.Orders = DefaultOrders
	}
	if c.Relays <= 0 {
		c.Relays = DefaultRelays
	}
	if c.Consumers <= 0 {
		c.Consumers = DefaultConsumers
	}
	if c.Users <= 0 {
		c.Users = DefaultUsers
	}
	if c.Inboxes <= 0 {
		c.Inboxes = 1
	}
	if c.GenRounds <= 0 {
		c.GenRounds = DefaultGenRounds
	}
	if len(c.Kinds) == 0 {
		c.Kinds = slices.Clone(Kinds)
	}
}

// Limits of Config, checked by Validate: a chaos run stays short.
const (
	MaxDuration  = 5 * time.Minute
	MaxOrders    = 10000
	MaxRelays    = 8
	MaxConsumers = 8
	MaxInboxes   = 4
	MaxGenRounds = 500
	// DefaultGenRounds is the generated load's size in chaos: twice the
	// default suite's generatedLoad (50 rounds), 600 requests of 6 users.
	DefaultGenRounds = 100
)

// Validate checks a Config after SetDefaults.
func (c Config) Validate() error {
	switch {
	case c.Duration < 500*time.Millisecond || c.Duration > MaxDuration:
		return fmt.Errorf("--duration %v: want 500ms to %v", c.Duration, MaxDuration)
	case c.Orders > MaxOrders:
		return fmt.Errorf("--orders %d: at most %d", c.Orders, MaxOrders)
	case c.Relays > MaxRelays:
		return fmt.Errorf("--relays %d: at most %d", c.Relays, MaxRelays)
	case c.Consumers > MaxConsumers:
		return fmt.Errorf("--consumers %d: at most %d", c.Consumers, MaxConsumers)
	case c.Inboxes > MaxInboxes:
		return fmt.Errorf("--inboxes %d: at most %d", c.Inboxes, MaxInboxes)
	case c.GenRounds > MaxGenRounds:
		return fmt.Errorf("--gen-rounds %d: at most %d", c.GenRounds, MaxGenRounds)
	}
	for _, n := range c.Only {
		if n < 1 && !slices.Equal(c.Only, NoFaults) {
			return fmt.Errorf("--only-faults %d: fault numbers start at 1", n)
		}
	}
	return nil
}

// NoFaults as Config.Only keeps no fault of the schedule (--only-faults
// none): the load alone.
var NoFaults = []int{0}

// Keeps tells whether only (Config.Only: empty keeps every fault,
// NoFaults none) keeps the fault numbered n. The chaos scenario's schedule
// and the audit's both filter by it, so that one --only-faults replays a
// shrunk schedule of either.
func Keeps(only []int, n int) bool {
	return len(only) == 0 || slices.Contains(only, n)
}

// ParseOnly parses --only-faults: "" (every fault), "none" (NoFaults), or
// fault numbers from 1, comma-separated.
func ParseOnly(s string) ([]int, error) {
	switch s {
	case "":
		return nil, nil
	case "none":
		return slices.Clone(NoFaults), nil
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--only-faults %q: want fault numbers from 1, comma-separated, or none", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// FormatOnly is the --only-faults value that ParseOnly reads back as only
// ("" for every fault).
func FormatOnly(only []int) string {
	if slices.Equal(only, NoFaults) {
		return "none"
	}
	parts := make([]string, len(only))
	for i, n := range only {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// Fault is one planned fault: what, on what, when and for how long.
type Fault struct {
	// N is the fault's 1-based number in the generated schedule (kept
	// when Only filters it, so that a shrunk schedule names its faults as
	// the full one does).
	N    int
	At   time.Duration // from the start of the load
	Kind Kind
	// Target is the process, component or link the fault hits: an actor
	// name ("relay-2", "consumer-1", "orders"), "broker", "database", or
	// a link "relay-1>database".
	Target string
	// For is how long the fault lasts before the nemesis heals it (0 for
	// an instant fault: a kill, a restart, a killed connection).
	For time.Duration
	// Delay is the latency a Latency fault adds to each packet.
	Delay time.Duration
}

func (f Fault) String() string {
	s := fmt.Sprintf("#%d %s %s at %v", f.N, f.Kind, f.Target, f.At.Round(time.Millisecond))
	if f.For > 0 {
		s += " for " + f.For.Round(time.Millisecond).String()
	}
	if f.Delay > 0 {
		s += " delay " + f.Delay.String()
	}
	return s
}

// RelayName, ConsumerName and OrdersName name the actor slots.
func RelayName(i int) string    { return "relay-" + strconv.Itoa(i) }
func ConsumerName(i int) string { return "consumer-" + strconv.Itoa(i) }

// OrdersName is the order service's slot.
const OrdersName = "orders"

// Targets of the faults that hit a component rather than an actor.
const (
	TargetBroker   = "broker"
	TargetDatabase = "database"
)

// streams separate the random choices of the schedule from those of the
// load, so that changing the number of orders does not move a fault.
const (
	streamSchedule = 0x6e656d65736973 // "nemesis"
	streamLoad     = 0x6c6f6164       // "load"
)

// Schedule generates the faults of cfg (after SetDefaults): a Poisson-like
// sequence with a mean gap of DefaultEvery over [0, Duration). It draws
// the same sequence of gaps (each between 100 ms and twice the mean, so
// that no second of the run goes without a fault) and choices whatever the duration, so the
// schedule of a shorter duration is a prefix of a longer one's: shrinking
// the duration drops the last faults and moves none.
func Schedule(cfg Config) []Fault {
	if cfg.Plan != nil {
		var out []Fault
		for i, f := range cfg.Plan {
			f.N = i + 1
			if f.At < cfg.Duration && Keeps(cfg.Only, f.N) {
				out = append(out, f)
			}
		}
		return out
	}
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), streamSchedule))
	var out []Fault
	at := time.Duration(0)
	for n := 1; ; n++ {
		// The first fault comes after a quarter of a gap at least, so
		// that every actor has started and some load is in flight.
		gap := time.Duration(r.ExpFloat64() * float64(DefaultEvery))
		gap = min(max(gap, 100*time.Millisecond), 2*DefaultEvery)
		at += gap
		f := draw(r, cfg)
		if at >= cfg.Duration {
			break
		}
		f.N, f.At = n, at
		if Keeps(cfg.Only, n) {
			out = append(out, f)
		}
	}
	return out
}

// draw picks one fault's kind, target and length. It always consumes the
// same number of random values, whatever it picks, so that one choice
// does not shift the next fault's.
func draw(r *rand.Rand, cfg Config) Fault {
	k := cfg.Kinds[r.IntN(len(cfg.Kinds))]
	pick, role, length, delay := r.IntN(1<<20), r.IntN(3), r.IntN(1000), r.IntN(1000)
	relay := RelayName(1 + pick%cfg.Relays)
	actor := []string{relay, ConsumerName(1 + pick%(cfg.Consumers*max(cfg.Inboxes, 1))), OrdersName}[role]
	f := Fault{Kind: k}
	switch k {
	case Kill:
		f.Target = actor
	case Pause:
		f.Target = relay
		// Longer than the relay's lease (ChaosLease), so that it wakes up
		// after another relay took its claims over.
		f.For = PauseLease + 300*time.Millisecond + time.Duration(length)*time.Millisecond/2
	case ProduceRefused, ProduceTimeout, AckLost, FetchError, Rebalance:
		f.Target = TargetBroker
		f.For = 200*time.Millisecond + time.Duration(length)*time.Millisecond/2
	case BrokerRestart:
		f.Target = TargetBroker
	case DBCrash:
		f.Target = TargetDatabase
	case ConnKill:
		// The connections of a relay, a consumer or the order service,
		// killed inside a transaction (the runner aims at one).
		f.Target = actor
	case Latency, NetCut:
		f.Target = actor + ">" + []string{TargetDatabase, TargetBroker}[pick%2]
		if actor == OrdersName {
			f.Target = actor + ">" + TargetDatabase // the order service has no broker
		}
		f.For = 300*time.Millisecond + time.Duration(length)*time.Millisecond
		if k == Latency {
			f.Delay = time.Duration(20+delay%180) * time.Millisecond
		}
	}
	return f
}

// PauseLease is the relays' lease in the chaos scenario: a paused relay
// sleeps past it.
const PauseLease = 1 * time.Second

// Request is one order of the load, in the order the load sends them.
type Request struct {
	N        int    // 1-based
	User     string // principal
	Key      string // Idempotency-Key
	Quantity int
	// Token names a token the service must refuse (one of BadTokens,
	// answered 401 with no write); "" is a valid token of User.
	Token string
}

// BadTokens are the tokens a load of at least MixFrom requests sends once
// each, besides valid ones: unsigned (alg none), without exp, not valid
// yet (nbf), of another issuer, for another audience.
var BadTokens = []string{"algNone", "noExp", "notYetValid", "wrongIssuer", "wrongAudience"}

// MixFrom is the smallest load that mixes in the BadTokens and reuses
// keys: such a load sends what the order service must refuse or keep
// apart, as real clients do.
const MixFrom = 20

// keyReuses is how many requests of a mixed load reuse the key of an
// earlier request under another user: the same Idempotency-Key from two
// users is two orders.
const keyReuses = 2

// Load generates the requests of cfg (after SetDefaults) in send order.
func Load(cfg Config) []Request {
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), streamLoad))
	out := make([]Request, cfg.Orders)
	for i := range out {
		out[i] = Request{
			N:        i + 1,
			User:     "user-" + strconv.Itoa(1+r.IntN(cfg.Users)),
			Key:      fmt.Sprintf("chaos-%d-%d", cfg.Seed, i+1),
			Quantity: 1 + r.IntN(2),
		}
	}
	if cfg.Orders >= MixFrom && cfg.Users >= 2 {
		// Drawn after the requests above, so that those stay what the
		// seed made before the mix.
		pick := r.Perm(len(out) - 1)
		for i, t := range BadTokens {
			out[1+pick[i]].Token = t
		}
		reusers := pick[len(BadTokens) : len(BadTokens)+keyReuses]
		taken := map[int]bool{} // a key is reused once at most
		for _, p := range reusers {
			taken[1+p] = true
		}
		for _, p := range reusers {
			i := 1 + p
			var from []int // earlier requests whose key is their own
			for j := range i {
				if !taken[j] {
					from = append(from, j)
				}
			}
			if len(from) == 0 {
				continue
			}
			j := from[r.IntN(len(from))]
			taken[j] = true
			out[i].Key = out[j].Key
			if out[i].User == out[j].User {
				n, _ := strconv.Atoi(strings.TrimPrefix(out[j].User, "user-"))
				out[i].User = "user-" + strconv.Itoa(1+n%cfg.Users)
			}
		}
	}
	return out
}

// Counts returns how many faults of each kind faults holds, by kind name
// (spec.FormatFaultCounts renders them).
func Counts(faults []Fault) map[string]int {
	out := map[string]int{}
	for _, f := range faults {
		out[string(f.Kind)]++
	}
	return out
}
