package infra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnvKafkaBrokers names an external cluster (comma separated host:port);
// empty means the embedded broker.
const EnvKafkaBrokers = "ORDERFLOW_KAFKA_BROKERS"

// Kafka modes as recorded in the evidence.
const (
	ModeEmbedded = "embedded"
	ModeExternal = "external"
	// ModeContainer: a broker in a container the run started; used like
	// an external one.
	ModeContainer = "container"
)

// KafkaConfig configures StartKafka. The zero value starts an embedded
// kfake broker on a random loopback port, in memory.
type KafkaConfig struct {
	// Brokers of an external cluster; empty starts the embedded broker.
	Brokers []string
	// Listen is the embedded broker's address (default 127.0.0.1:0).
	Listen string
	// Advertise is the address the embedded broker tells its clients to
	// connect to (default: the address it listens on). It is needed where
	// the two differ: a broker in a container listens on the container's
	// every interface and is reached through a port published on the
	// host. With Advertise set, Listen may name any interface.
	Advertise string
	// DataDir makes the embedded broker persist its log (default: memory)
	// and keep every record and committed offset however old (no
	// retention): it is the broker's record of a run, or a copy of one.
	DataDir string
}

// neverExpire are the broker settings of a broker with a data directory:
// ten years, the most kfake takes (it makes time.Durations of them).
var neverExpire = map[string]string{
	"offsets.retention.minutes":           "5256000",
	"offsets.retention.check.interval.ms": "315360000000",
	"log.retention.ms":                    "-1",
}

// ResolveBrokers returns the brokers from the flag, else the environment,
// else none (embedded).
func ResolveBrokers(flagValue string) []string {
	v := flagValue
	if v == "" {
		v = os.Getenv(EnvKafkaBrokers)
	}
	var out []string
	for _, b := range strings.Split(v, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// Kafka is the cluster a run talks to. Clients use kgo the same way in both
// modes; only who started the broker differs.
type Kafka struct {
	Mode           string
	Implementation string
	Brokers        []string
	cluster        *kfake.Cluster
	errs           *errorLog     // what the embedded broker logged as errors (with a data directory)
	opts           []kfake.Opt   // the embedded broker's options, for Restart (chaosbroker.go)
	restartMu      sync.RWMutex  // held by Restart while cluster changes
	refused        *atomic.Int64 // connections the request guard closed (kafkaguard.go)
}

// errorLog is a kfake.Logger keeping the errors: kfake reports a failure
// to persist its state at Close only through its logger.
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *errorLog) Logf(level kfake.LogLevel, msg string, args ...any) {
	if level != kfake.LogLevelError {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(msg, args...))
}

func (l *errorLog) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return nil
	}
	return errors.New(strings.Join(l.lines, "; "))
}

// StartKafka starts the embedded broker or checks that the external one
// answers. A failure wraps ErrUnavailable.
func StartKafka(ctx context.Context, cfg KafkaConfig) (*Kafka, error) {
	if len(cfg.Brokers) > 0 {
		k := &Kafka{Mode: ModeExternal, Brokers: cfg.Brokers}
		if err := k.Ping(ctx); err != nil {
			return nil, err
		}
		k.Implementation = k.describeExternal(ctx)
		return k, nil
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DefaultNumPartitions(1)}
	if cfg.Listen != "" {
		host, portStr, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded broker listen address %q: %w", cfg.Listen, err)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("embedded broker listen address %q: bad port", cfg.Listen)
		}
		if cfg.Advertise == "" && host != "" && host != "127.0.0.1" && host != "localhost" {
			return nil, fmt.Errorf("embedded broker listens on 127.0.0.1 only, not %q", host)
		}
		opts = append(opts, kfake.Ports(port))
	}
	listen := net.Listen
	if cfg.Advertise != "" {
		lfn, err := advertisedListener(cfg.Listen, cfg.Advertise)
		if err != nil {
			return nil, err
		}
		listen = lfn
	}
	// Every connection reads through the request guard: kfake would
	// otherwise die of one malformed request (kafkaguard.go). Restart
	// reuses these options, and with them the guard.
	refused := new(atomic.Int64)
	opts = append(opts, kfake.ListenFn(guardListen(listen, refused)))
	var errs *errorLog
	if cfg.DataDir != "" {
		errs = &errorLog{}
		opts = append(opts, kfake.DataDir(cfg.DataDir), kfake.WithLogger(errs), kfake.BrokerConfigs(neverExpire))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: start embedded broker: %v", ErrUnavailable, err)
	}
	return &Kafka{
		Mode:           ModeEmbedded,
		Implementation: "kfake " + ModuleVersion("github.com/twmb/franz-go/pkg/kfake") + " (franz-go in-process Kafka wire-protocol broker, not Apache Kafka)",
		Brokers:        c.ListenAddrs(),
		cluster:        c,
		errs:           errs,
		opts:           opts,
		refused:        refused,
	}, nil
}

// advertisedListener returns a kfake.ListenFn that listens on listen
// (whatever address kfake asks for) and reports advertise as its address:
// kfake tells its clients the address of its listener.
func advertisedListener(listen, advertise string) (func(string, string) (net.Listener, error), error) {
	if listen == "" {
		return nil, errors.New("embedded broker: an advertised address needs a listen address")
	}
	if _, port, err := net.SplitHostPort(advertise); err != nil || port == "" || port == "0" {
		return nil, fmt.Errorf("embedded broker advertised address %q: want host:port with a port", advertise)
	}
	return func(network, _ string) (net.Listener, error) {
		ln, err := net.Listen(network, listen)
		if err != nil {
			return nil, err
		}
		return advertised{Listener: ln, addr: advertise}, nil
	}, nil
}

// advertised is a listener that reports another address than its own.
type advertised struct {
	net.Listener
	addr string
}

func (a advertised) Addr() net.Addr { return advertisedAddr(a.addr) }

type advertisedAddr string

func (a advertisedAddr) Network() string { return "tcp" }
func (a advertisedAddr) String() string  { return string(a) }

// Shutdown stops the embedded broker, which then writes the rest of its
// state (partition snapshots, topics, group offsets) into its data
// directory, and returns the errors it logged (a failure to persist is
// reported only there). A no-op for an external broker.
func (k *Kafka) Shutdown() error {
	k.Close()
	if k.errs == nil {
		return nil
	}
	if err := k.errs.err(); err != nil {
		return fmt.Errorf("embedded broker: %w", err)
	}
	return nil
}

// Cluster returns the embedded kfake cluster (nil in external mode), for
// fault injection at the protocol.
func (k *Kafka) Cluster() *kfake.Cluster {
	k.restartMu.RLock()
	defer k.restartMu.RUnlock()
	return k.cluster
}

// Close stops the embedded broker; it leaves an external one alone.
func (k *Kafka) Close() {
	if c := k.Cluster(); c != nil {
		c.Close()
	}
}

// ClientOpts returns the options every client of ours starts from. The
// metadata minimum age is kept small: kgo otherwise waits about 5 s before
// refreshing metadata after a leader error.
func (k *Kafka) ClientOpts(extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(k.Brokers...),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.DialTimeout(3 * time.Second),
	}
	return append(opts, extra...)
}

// pingTimeout bounds Ping (a caller's shorter deadline bounds it too).
const pingTimeout = 5 * time.Second

// Ping asks the cluster for its metadata within a bounded time.
func (k *Kafka) Ping(ctx context.Context) error {
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		return fmt.Errorf("%w: Kafka client for %s: %v", ErrUnavailable, strings.Join(k.Brokers, ","), err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return unavailablef("Kafka at %s stopped answering (no reply in time)", strings.Join(k.Brokers, ","))
		}
		return unavailablef("Kafka at %s is unreachable: %v", strings.Join(k.Brokers, ","), err)
	}
	return nil
}

// CreateTopic creates a topic explicitly (replication factor 1 on the
// embedded broker, the cluster default otherwise). An existing topic is an
// error: every scenario uses fresh topics.
func (k *Kafka) CreateTopic(ctx context.Context, name string, partitions int32) error {
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rf := int16(-1)
	if k.Mode == ModeEmbedded {
		rf = 1
	}
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return nil
}

// DeleteTopic deletes a topic; a topic that does not exist is not an error.
func (k *Kafka) DeleteTopic(ctx context.Context, name string) error {
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	return nil
}

// ModuleVersion returns the version of a module linked into this binary, or
// "(devel)" when build information is unavailable (as in tests).
func ModuleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "(unknown)"
}

// describeExternal says what the cluster reports about itself. The Kafka
// protocol does not name the broker software, so the tool cannot verify it
// and says so.
func (k *Kafka) describeExternal(ctx context.Context) string {
	const unverified = "broker software not verifiable over the Kafka protocol"
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		return "external Kafka cluster (" + unverified + ")"
	}
	defer cl.Close()
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(mctx)
	if err != nil {
		return "external Kafka cluster (" + unverified + ")"
	}
	return fmt.Sprintf("external Kafka cluster (cluster id %q, %d broker(s); %s)", md.Cluster, len(md.Brokers), unverified)
}

// EndOffset returns the sum over the topic's partitions of their end
// offsets: how many records the topic holds (nothing is ever deleted from
// our topics during a run).
func (k *Kafka) EndOffset(ctx context.Context, topic string) (int64, error) {
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		return 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	var total int64
	offs.Each(func(o kadm.ListedOffset) { total += o.Offset })
	return total, nil
}
