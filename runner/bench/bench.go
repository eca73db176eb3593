// Package bench measures the reference pipeline (the order service, the
// relay and the consumer of runner/internal) on a scratch database and a
// broker: how fast orders are placed, how fast the relays drain the
// outbox into the topic, how fast the consumers apply the records, and how
// fast and how late an order placed with everything running becomes its
// effect. It verifies its own run: every event placed has exactly one
// effect.
//
// A run has four phases over Options.Events orders each (2 × Events in
// all), on one topic and one scratch database:
//
//  1. placement: the orders are placed over HTTP by Options.Clients
//     concurrent clients, nothing else running (placement_events_per_s);
//  2. relay: Options.Relays relays drain those intents into the topic,
//     nothing else running (relay_events_per_s: from the relays' start to
//     the last intent marked SENT);
//  3. consumers: Options.Consumers members of one group join and apply
//     those records (consumer_events_per_s, from the first effect);
//  4. end to end: with the relays and the consumers running, another
//     Events orders are placed (end_to_end_events_per_s: from the first
//     placement to the last effect), and each order's latency from its
//     commit to its effect's commit is taken from the actors' event logs
//     (p50 and p99).
package bench

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
)

// Defaults of Options, chosen for the best relay figure on the
// development machine (2 vCPU; BENCHMARKS.md).
const (
	DefaultEvents     = 20000
	DefaultRelays     = 2
	DefaultConsumers  = 4
	DefaultBatch      = 1000
	DefaultPartitions = 8
	DefaultClients    = 16
)

// ErrBadOptions marks an Options that Validate refuses.
var ErrBadOptions = errors.New("bad bench options")

// ErrCheckFailed marks a run whose own check found an event without
// exactly one effect.
var ErrCheckFailed = errors.New("bench check failed")

// Options configures Run. Zero values take the defaults above.
type Options struct {
	// Events is the number of orders of each phase (2 × Events in all).
	Events int
	// Relays, Consumers: how many of each run at once.
	Relays, Consumers int
	// Batch is the relays' batch (relay.Config.Batch).
	Batch int
	// Partitions of the topic.
	Partitions int
	// History is the number of SENT rows already in the outbox before the
	// first order (an outbox that keeps its history).
	History int
	// Clients is the number of concurrent placement clients.
	Clients int
	// RelayOnly runs the relay phase alone: the intents are written into
	// the outbox by SQL (as a peer's are, scripts/bench-peers.sh), without
	// orders, and drained by the relays; the check then asks every intent
	// SENT and on the topic, and nothing more.
	RelayOnly bool
	// ConsumerPerRecord runs the consumers with one effect transaction and
	// one offset commit per record, as the scenarios do; by default they
	// settle each polled batch in one transaction (consumer.Config.
	// BatchEffects).
	ConsumerPerRecord bool
	// Linger is the relays' producer linger (0: none; the client still
	// packs what is buffered while a request is in flight).
	Linger time.Duration
	// MySQL is an external server; nil starts a private mariadbd for the
	// run (no binary log; removed at the end).
	MySQL *mysql.Config
	// Brokers are external Kafka brokers; empty starts the embedded one.
	Brokers []string
	// Keep keeps the scratch database (and the topic of an external
	// broker) and the event logs.
	Keep bool
	// LogDir receives the actors' event logs (default: a temporary
	// directory, removed at the end unless Keep).
	LogDir string
	// Progress receives progress lines (default: discarded).
	Progress io.Writer

	// beforeCheck, when set (tests), runs on the scratch database before
	// the run's own check.
	beforeCheck func(p *pipeline) error
}

func (o *Options) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Events, DefaultEvents)
	def(&o.Relays, DefaultRelays)
	def(&o.Consumers, DefaultConsumers)
	def(&o.Batch, DefaultBatch)
	def(&o.Partitions, DefaultPartitions)
	def(&o.Clients, DefaultClients)
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// Validate reports the first problem of o after defaults.
func (o *Options) Validate() error {
	o.setDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadOptions}, args...)...)
	}
	switch {
	case o.Events < 1 || o.Events > 10_000_000:
		return bad("--events %d: want 1 to 10000000", o.Events)
	case o.Relays < 1 || o.Relays > 64:
		return bad("--relays %d: want 1 to 64", o.Relays)
	case o.Consumers < 1 || o.Consumers > 64:
		return bad("--consumers %d: want 1 to 64", o.Consumers)
	case o.Batch < 1 || o.Batch > 10000:
		return bad("--batch %d: want 1 to 10000", o.Batch)
	case o.Partitions < 1 || o.Partitions > 1024:
		return bad("--partitions %d: want 1 to 1024", o.Partitions)
	case o.History < 0 || o.History > 100_000_000:
		return bad("--history %d: want 0 to 100000000", o.History)
	case o.Clients < 1 || o.Clients > 256:
		return bad("--clients %d: want 1 to 256", o.Clients)
	case o.Linger < 0 || o.Linger > time.Second:
		return bad("--linger %v: want 0 to 1s", o.Linger)
	}
	return nil
}

// publishTimeout bounds the publish of one batch.
const publishTimeout = relay.DefaultPublishTimeout
