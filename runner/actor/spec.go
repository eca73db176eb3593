package actor

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
)

// Role is which actor a process runs.
type Role string

// The roles.
const (
	Orders   Role = "orders"
	Relay    Role = "relay"
	Consumer Role = "consumer"
)

// Roles lists the roles in a stable order.
func Roles() []Role { return []Role{Orders, Relay, Consumer} }

// ParseRole checks a role name.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles() {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("%w: unknown actor role %q (want orders, relay or consumer)", ErrUsage, s)
}

// Errors of Run. ErrUsage marks bad arguments (the CLI exits 2); failures
// to reach the database or the broker wrap infra.ErrUnavailable (exit 3); a
// simulated crash wraps fault.ErrCrash.
var (
	ErrUsage = errors.New("bad actor arguments")
	// ErrNotReached: a --once consumer did not reach its --until-* counts
	// within --timeout.
	ErrNotReached = errors.New("consumer did not reach the wanted counts")
)

// Defaults of Spec.
const (
	DefaultListen       = "127.0.0.1:0"
	DefaultPoll         = relay.DefaultPoll
	DefaultOnceTimeout  = 30 * time.Second
	shutdownGracePeriod = 5 * time.Second
)

// Spec is one actor process: its role and flags. The zero values of the
// optional fields take the defaults of the actor's package.
type Spec struct {
	Role Role

	// Common to every role.
	DB       string   // scratch database (ofa_...) carrying our marker; required
	LogPath  string   // JSONL event log to create (truncating); empty: no log
	RunID    string   // run id stamped on events; required with LogPath
	Scenario string   // scenario id stamped on events; required with LogPath
	Actor    string   // actor name in events; default: the package's default
	Faults   []string // "point[:kill|crash]", each armed for its first hit; default action kill
	Plant    string   // planted bug name; empty: none
	// StopAt are points where the process stops itself when a signal
	// arms them (stop.go): the first on SIGUSR1, the second on SIGUSR2,
	// the third on signal 35.
	StopAt []string

	// Orders.
	Listen string // HTTP address; default 127.0.0.1:0

	// Relay and consumer.
	Brokers []string // default: ORDERFLOW_KAFKA_BROKERS; required (an embedded broker of another process cannot be shared otherwise)
	Topic   string   // required
	Once    bool     // relay: one RunOnce; consumer: poll until the --until-* counts
	// Via, when set, is a host:port every connection to the broker goes
	// to instead of the address the broker advertises (a proxy in front
	// of a single broker).
	Via string

	// Relay.
	ClaimID        string
	Lease          time.Duration
	PublishTimeout time.Duration
	Batch          int
	Poll           time.Duration // wait between empty rounds without --once

	// Consumer.
	Group         string
	Name          string // inbox consumer name
	Member        string // member name in events (default: Actor)
	InstanceID    string // static group membership (group.instance.id); empty: dynamic
	BatchEffects  bool   // settle a poll's records in one effect transaction (consumer.Config.BatchEffects)
	UntilEffects  int
	UntilReceived int
	Timeout       time.Duration // bound of --once; default 30s
}

// commaList is a flag.Value for a comma-separated list.
type commaList struct{ p *[]string }

func (c commaList) String() string {
	if c.p == nil {
		return ""
	}
	return strings.Join(*c.p, ",")
}

func (c commaList) Set(v string) error {
	*c.p = nil
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*c.p = append(*c.p, s)
		}
	}
	return nil
}

// repeated is a flag.Value for a repeatable flag.
type repeated struct{ p *[]string }

func (r repeated) String() string {
	if r.p == nil {
		return ""
	}
	return strings.Join(*r.p, " ")
}

func (r repeated) Set(v string) error { *r.p = append(*r.p, v); return nil }

// RegisterFlags defines the flags of s.Role on fs, bound to s's fields.
func (s *Spec) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.DB, "db", "", "scratch `database` (ofa_...) carrying the orderflow-audit marker; the server comes from $"+infra.EnvMySQLDSN)
	fs.StringVar(&s.LogPath, "log", "", "create the JSONL event log at `path` (truncating); empty: no log")
	fs.StringVar(&s.RunID, "run-id", "", "run `id` stamped on every event (required with --log)")
	fs.StringVar(&s.Scenario, "scenario", "", "scenario `id` stamped on every event (required with --log)")
	fs.StringVar(&s.Actor, "actor", "", "actor `name` in the events (default: the role's default)")
	fs.Var(repeated{&s.Faults}, "fault", "arm fault `point[:kill|crash]` for its first hit (repeatable; default action kill = SIGKILL this process)")
	fs.StringVar(&s.Plant, "plant", "", "plant `bug` (negative control)")
	fs.Var(repeated{&s.StopAt}, "stop-at", "stop this process (SIGSTOP to itself) at `point` on its next pass within "+
		StopArmWindow.String()+" after SIGUSR1 (the first --stop-at), SIGUSR2 (the second) or signal 35 (the third); SIGCONT resumes it")
	switch s.Role {
	case Orders:
		fs.StringVar(&s.Listen, "listen", DefaultListen, "HTTP `address`; the first stdout line is \"listening on http://ADDR\"")
	case Relay, Consumer:
		fs.Var(commaList{&s.Brokers}, "brokers", "Kafka `host:port,...` (default $"+infra.EnvKafkaBrokers+")")
		fs.StringVar(&s.Topic, "topic", "", "Kafka `topic` (required)")
		fs.StringVar(&s.Via, "via", "", "connect to the broker through `host:port` (a proxy in front of a single broker)")
	}
	switch s.Role {
	case Relay:
		fs.BoolVar(&s.Once, "once", false, "claim, publish and mark one batch, print a JSON summary line, exit")
		fs.StringVar(&s.ClaimID, "claim-id", "", "this relay's claim `id` (default: random)")
		fs.DurationVar(&s.Lease, "lease", 0, "claim lease `duration` (default 30s)")
		fs.DurationVar(&s.PublishTimeout, "publish-timeout", 0, "bound of one publish (`duration`, default 10s)")
		fs.IntVar(&s.Batch, "batch", 0, "intents claimed per round (`n`, default 16)")
		fs.DurationVar(&s.Poll, "poll", DefaultPoll, "wait between rounds that found nothing (`duration`; without --once)")
	case Consumer:
		fs.BoolVar(&s.Once, "once", false, "poll until the --until-* counts are reached (default: one record received), print a JSON stats line, exit")
		fs.StringVar(&s.Group, "group", "", "consumer `group` (default: --name)")
		fs.StringVar(&s.Name, "name", "", "inbox consumer `name` (default notifier)")
		fs.StringVar(&s.Member, "member", "", "member `name` in the events (default: --actor)")
		fs.StringVar(&s.InstanceID, "instance-id", "", "static group membership: this member's group.instance.id (`id`); a restarted\nprocess with the same id takes its place without a rebalance")
		fs.BoolVar(&s.BatchEffects, "batch-effects", false, "settle the records of a poll in one effect transaction and one offset commit (the batched consumer)")
		fs.IntVar(&s.UntilEffects, "until-effects", 0, "with --once: stop after `n` effects")
		fs.IntVar(&s.UntilReceived, "until-received", 0, "with --once: stop after `n` received records")
		fs.DurationVar(&s.Timeout, "timeout", DefaultOnceTimeout, "with --once: give up after `duration` (exit 1)")
	}
}

// Args returns the command line after the executable: "actor", the role
// and the flags of s that differ from their defaults. It never contains the
// DSN or the secret: pass those with Env.
func (s Spec) Args() []string {
	args := []string{"actor", string(s.Role)}
	str := func(name, v string) {
		if v != "" {
			args = append(args, "--"+name, v)
		}
	}
	dur := func(name string, v, def time.Duration) {
		if v != 0 && v != def {
			args = append(args, "--"+name, v.String())
		}
	}
	num := func(name string, v int) {
		if v != 0 {
			args = append(args, "--"+name, strconv.Itoa(v))
		}
	}
	str("db", s.DB)
	str("log", s.LogPath)
	str("run-id", s.RunID)
	str("scenario", s.Scenario)
	str("actor", s.Actor)
	for _, f := range s.Faults {
		str("fault", f)
	}
	str("plant", s.Plant)
	for _, p := range s.StopAt {
		str("stop-at", p)
	}
	switch s.Role {
	case Orders:
		if s.Listen != DefaultListen {
			str("listen", s.Listen)
		}
	case Relay, Consumer:
		str("brokers", strings.Join(s.Brokers, ","))
		str("topic", s.Topic)
		str("via", s.Via)
		if s.Once {
			args = append(args, "--once")
		}
	}
	switch s.Role {
	case Relay:
		str("claim-id", s.ClaimID)
		dur("lease", s.Lease, 0)
		dur("publish-timeout", s.PublishTimeout, 0)
		num("batch", s.Batch)
		dur("poll", s.Poll, DefaultPoll)
	case Consumer:
		str("group", s.Group)
		str("name", s.Name)
		str("member", s.Member)
		str("instance-id", s.InstanceID)
		if s.BatchEffects {
			args = append(args, "--batch-effects")
		}
		num("until-effects", s.UntilEffects)
		num("until-received", s.UntilReceived)
		dur("timeout", s.Timeout, DefaultOnceTimeout)
	}
	return args
}

// Env returns the environment entries a child needs on top of the parent's:
// the DSN (with its password: never log these) and, if given, the secret.
func Env(dsn string, secret []byte) []string {
	env := []string{infra.EnvMySQLDSN + "=" + dsn}
	if len(secret) > 0 {
		env = append(env, EnvJWTSecret+"="+hex.EncodeToString(secret))
	}
	return env
}

var dbNameRE = regexp.MustCompile(`^ofa_[a-z0-9_]{1,60}$`)

// ParseFault parses "point[:kill|crash]" (default kill).
func ParseFault(s string) (fault.Point, fault.Action, error) {
	name, action, _ := strings.Cut(s, ":")
	p, err := fault.Parse(name)
	if err != nil {
		return "", 0, fmt.Errorf("%w: --fault %q: %v", ErrUsage, s, err)
	}
	switch action {
	case "", "kill":
		return p, fault.Kill, nil
	case "crash":
		return p, fault.Crash, nil
	}
	return "", 0, fmt.Errorf("%w: --fault %q: action must be kill or crash", ErrUsage, s)
}

// Validate checks s without touching the network; errors wrap ErrUsage.
func (s *Spec) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
	}
	if _, err := ParseRole(string(s.Role)); err != nil {
		return err
	}
	switch {
	case s.DB == "":
		return bad("--db is required")
	case !dbNameRE.MatchString(s.DB):
		return bad("--db %q: actors run only in scratch databases named ofa_[a-z0-9_]+", s.DB)
	case s.LogPath != "" && (s.RunID == "" || s.Scenario == ""):
		return bad("--log needs --run-id and --scenario")
	}
	for _, f := range s.Faults {
		if _, _, err := ParseFault(f); err != nil {
			return err
		}
	}
	if _, err := plant.Parse(s.Plant); err != nil {
		return bad("--plant: %v", err)
	}
	if _, err := parseStopAt(s.StopAt); err != nil {
		return err
	}
	switch s.Role {
	case Orders:
		if s.Listen == "" {
			s.Listen = DefaultListen
		}
		if _, _, err := net.SplitHostPort(s.Listen); err != nil {
			return bad("--listen %q: %v", s.Listen, err)
		}
	case Relay, Consumer:
		if len(s.Brokers) == 0 {
			s.Brokers = infra.ResolveBrokers("")
		}
		if len(s.Brokers) == 0 {
			return bad("no broker: give --brokers or set %s (an actor process cannot reach another process's in-memory broker otherwise)", infra.EnvKafkaBrokers)
		}
		if s.Topic == "" {
			return bad("--topic is required")
		}
		if s.Via != "" {
			if _, _, err := net.SplitHostPort(s.Via); err != nil {
				return bad("--via %q: %v", s.Via, err)
			}
		}
	}
	switch s.Role {
	case Relay:
		if s.Lease < 0 || s.PublishTimeout < 0 || s.Batch < 0 || s.Poll < 0 {
			return bad("--lease, --publish-timeout, --batch and --poll must not be negative")
		}
		if s.Poll == 0 {
			s.Poll = DefaultPoll
		}
	case Consumer:
		if s.UntilEffects < 0 || s.UntilReceived < 0 || s.Timeout < 0 {
			return bad("--until-effects, --until-received and --timeout must not be negative")
		}
		if !s.Once && (s.UntilEffects > 0 || s.UntilReceived > 0) {
			return bad("--until-effects and --until-received need --once")
		}
		if s.Timeout == 0 {
			s.Timeout = DefaultOnceTimeout
		}
	}
	return nil
}
