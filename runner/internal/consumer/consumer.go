// Package consumer is the inbox consumer of the system under test: a Kafka
// consumer-group member with manual offset commits that turns each record
// into exactly one business effect. For each record one transaction inserts
// the inbox row (its primary key (consumer, event_id) rejects a replay) and
// the notification; only after that transaction committed is the record's
// offset committed. A crash between the two replays the record to the next
// member of the group, and the inbox rejects it.
//
// Every action emits one event after its outcome is known: receive,
// inbox_insert and effect (after the commit) or inbox_reject (after the
// rollback), offset_commit (after the broker acknowledged).
package consumer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Defaults of Config.
const (
	DefaultName   = "notifier"
	DefaultMember = "consumer"
)

// Group timing, short for tests: kfake honours them. A member that leaves
// (Close) is replaced at once; one that dies without leaving holds its
// partitions until SessionTimeout.
const (
	SessionTimeout    = spec.GroupSessionTimeout
	RebalanceTimeout  = spec.GroupRebalanceTimeout
	HeartbeatInterval = spec.GroupHeartbeatInterval
	FetchMaxWait      = 100 * time.Millisecond
)

// handledKeep bounds the records kept for Handled.
const handledKeep = 256

// ErrClosed is returned by PollOnce after Close.
var ErrClosed = errors.New("consumer closed")

// Config configures a Consumer.
type Config struct {
	// DB is the pool of the scenario's database (required).
	DB *sql.DB
	// ClientOpts are the base client options (seed brokers etc., from
	// infra.Kafka.ClientOpts). The group options are added by New.
	ClientOpts []kgo.Opt
	// Topic is consumed (required).
	Topic string
	// Group is the consumer group (default: Name).
	Group string
	// Name is the inbox consumer name written to inbox and notification
	// rows (default "notifier").
	Name string
	// Member names this member in the events (default "consumer"), e.g.
	// "consumer-1".
	Member string
	// Log receives the events; nil records nothing.
	Log *evidence.Log
	// Faults are the armed fault points; nil injects nothing.
	Faults *fault.Injector
	// Plant is a planted bug (negative control); None is the correct
	// consumer.
	Plant plant.Bug
	// BatchEffects commits the effects of a polled batch of records in one
	// transaction and their offsets in one commit (batch.go), falling back
	// to one transaction per record when the batch's fails. Off (one
	// transaction and one offset commit per record) by default; the batch
	// variants of the scenarios (`run --consumer-mode batch|both`) and
	// `orderflow-audit bench` run this one. A planted bug of the
	// per-record path stays in the per-record path (Handle, and the
	// batch's fallback to it).
	BatchEffects bool
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

func (c *Config) setDefaults() {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Group == "" {
		c.Group = c.Name
	}
	if c.Member == "" {
		c.Member = DefaultMember
	}
}

// Validate reports the first problem of a Config after defaults.
func (c *Config) Validate() error {
	switch {
	case c.DB == nil:
		return errors.New("consumer config: DB is required")
	case c.Topic == "":
		return errors.New("consumer config: Topic is required")
	case len(c.Name) > 64:
		return fmt.Errorf("consumer config: Name %q longer than 64 characters", c.Name)
	case len(c.Group) > 64:
		return fmt.Errorf("consumer config: Group %q longer than 64 characters", c.Group)
	case !idRE.MatchString(c.Member):
		return fmt.Errorf("consumer config: Member %q is not a valid id", c.Member)
	}
	return nil
}

// Stats counts what a consumer did.
type Stats struct {
	Received         int // records handled (receive events), replays included
	InboxInserted    int // inbox rows committed
	InboxRejected    int // replays rejected by the inbox key
	Effects          int // notifications committed
	OffsetsCommitted int // offset commits acknowledged
	// EffectsRolledBack counts effect transactions that failed and rolled
	// back; CommitsUnknown those whose COMMIT went unanswered.
	EffectsRolledBack int
	CommitsUnknown    int
	// Owned is the partitions the group assigns this member now (a
	// state, not a count: sub keeps the later one).
	Owned int
}

func (s Stats) sub(o Stats) Stats {
	return Stats{
		Received:          s.Received - o.Received,
		InboxInserted:     s.InboxInserted - o.InboxInserted,
		InboxRejected:     s.InboxRejected - o.InboxRejected,
		Effects:           s.Effects - o.Effects,
		OffsetsCommitted:  s.OffsetsCommitted - o.OffsetsCommitted,
		EffectsRolledBack: s.EffectsRolledBack - o.EffectsRolledBack,
		CommitsUnknown:    s.CommitsUnknown - o.CommitsUnknown,
		Owned:             s.Owned,
	}
}

// Outcome is what Handle did with one record.
type Outcome struct {
	Identity
	// Rejected is true when the inbox rejected the record as a replay (no
	// effect).
	Rejected bool
	// NotificationID is the committed notification's id (0 on a replay or
	// when a crash came first).
	NotificationID int64
	// OffsetCommitted is true when the record's offset was committed.
	OffsetCommitted bool
}

// Consumer is one member of a consumer group.
type Consumer struct {
	cfg Config
	cl  *kgo.Client

	mu        sync.Mutex
	stats     Stats
	handled   []*kgo.Record
	closeOnce sync.Once
	// resume holds, for each partition rewound and not yet polled again
	// from there, the offset its next record must have (rewind, resumed;
	// under mu).
	resume map[topicPart]int64
	// committed holds, for each partition this member committed an
	// offset of and still owns, the offset it committed (the next
	// record's; under mu): a rewind of an interrupted batch goes no
	// further back (unsettled).
	committed map[topicPart]int64
}

// topicPart names a partition.
type topicPart struct {
	topic     string
	partition int32
}

// New checks cfg, creates the group client (manual commits, reset to the
// start of the topic, short group timeouts) and checks that the broker
// answers. Joining the group happens on the first poll.
func New(ctx context.Context, cfg Config) (*Consumer, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Consumer{cfg: cfg}
	opts := append([]kgo.Opt{}, cfg.ClientOpts...)
	opts = append(opts,
		kgo.ClientID(cfg.Member),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(SessionTimeout),
		kgo.RebalanceTimeout(RebalanceTimeout),
		kgo.HeartbeatInterval(HeartbeatInterval),
		kgo.FetchMaxWait(FetchMaxWait),
		// A rebalance waits until the polled batch is settled and
		// committed (PollOnce allows it again): otherwise a member
		// whose commit waits out a rebalance commits, under the new
		// generation, offsets of a partition it no longer holds, and
		// goes on with the rest of its batch of it, while the new
		// holder replays from the older commit and commits below it
		// (seen as offset-backwards in explore seed 62). A member
		// stopped past the session timeout is fenced instead: its
		// late commits fail with the old generation.
		kgo.BlockRebalanceOnPoll(),
		// Ownership is logged (ownership.go): the verifier holds the
		// time a partition spends without an owner to a bound.
		kgo.OnPartitionsAssigned(c.onAssigned),
		kgo.OnPartitionsRevoked(c.onRevoked),
		kgo.OnPartitionsLost(c.onLost),
	)
	if cfg.Plant == plant.CloseWithoutLeave {
		// A static member does not send LeaveGroup when it closes.
		opts = append(opts, kgo.InstanceID(cfg.Member))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: new client: %w", cfg.Member, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("consumer %s: ping broker: %w", cfg.Member, err)
	}
	c.cl = cl
	if err := c.emit(evidence.Event{Kind: evidence.KindGroupJoin, Topic: cfg.Topic, Consumer: cfg.Group}); err != nil {
		cl.Close()
		return nil, err
	}
	return c, nil
}

// Member returns the actor name of this member.
func (c *Consumer) Member() string { return c.cfg.Member }

// Client returns the underlying client (for inspection in tests).
func (c *Consumer) Client() *kgo.Client { return c.cl }

// Stats returns the counts so far.
func (c *Consumer) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Handled returns the records handled so far, oldest first (the last 256),
// so that a scenario can hand one to Handle again to simulate a redelivery.
func (c *Consumer) Handled() []*kgo.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*kgo.Record(nil), c.handled...)
}

func (c *Consumer) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// Handle processes one record: parse its identity, emit receive, run the
// effect transaction, pass AfterEffectBeforeOffsetCommit, commit the offset
// (record offset + 1) synchronously. A replay (inbox duplicate key) rolls
// back, emits inbox_reject and still commits the offset. An effect
// transaction that did not commit returns an error wrapping
// ErrEffectFailed with the offset uncommitted (PollOnce replays the
// record). A simulated crash returns an error wrapping fault.ErrCrash with
// the offset uncommitted; the caller then Closes this member, as a dead
// process would stop.
//
// Planted bugs: OffsetBeforeEffect commits the offset first, then passes
// AfterEffectBeforeOffsetCommit (here: between the offset commit and the
// effect, so a crash loses the effect), then runs the effect transaction.
// NoInboxDedupe writes the notification without the inbox row.
// EffectErrorSwallowed commits the offset of a failed effect transaction;
// DuplicateOffsetNotCommitted does not commit a duplicate's offset;
// OffsetNotPlusOne commits the record's own offset (effect.go and
// PollOnce hold the others; New the planted CloseWithoutLeave).
func (c *Consumer) Handle(ctx context.Context, r *kgo.Record) (Outcome, error) {
	var out Outcome
	id, err := c.receive(r)
	if err != nil {
		return out, err
	}
	return c.settle(ctx, r, id)
}

// receive parses r's identity, keeps r for Handled, counts it and emits
// receive.
func (c *Consumer) receive(r *kgo.Record) (Identity, error) {
	id, err := ParseIdentity(r)
	if err != nil {
		return id, fmt.Errorf("consumer %s: record %s/%d@%d: %w", c.cfg.Member, r.Topic, r.Partition, r.Offset, err)
	}
	c.mu.Lock()
	c.handled = append(c.handled, r)
	if len(c.handled) > handledKeep {
		c.handled = c.handled[len(c.handled)-handledKeep:]
	}
	c.stats.Received++
	c.mu.Unlock()
	return id, c.emit(evidence.Event{
		Kind:      evidence.KindReceive,
		EventID:   id.EventID,
		OrderID:   evidence.Ptr(id.OrderID),
		Topic:     r.Topic,
		Partition: evidence.Ptr(r.Partition),
		Offset:    evidence.Ptr(r.Offset),
		Consumer:  c.cfg.Group,
	})
}

// settle is Handle after the receive: the effect transaction, the fault
// point, the offset commit.
func (c *Consumer) settle(ctx context.Context, r *kgo.Record, id Identity) (Outcome, error) {
	out := Outcome{Identity: id}
	var err error
	if c.cfg.Plant == plant.OffsetBeforeEffect {
		if err := c.commitOffset(ctx, r); err != nil {
			return out, err
		}
		out.OffsetCommitted = true
		if err := c.hit(r, id); err != nil {
			return out, err
		}
		out.Rejected, out.NotificationID, err = c.effect(ctx, r, id)
		return out, err
	}

	out.Rejected, out.NotificationID, err = c.effect(ctx, r, id)
	if err != nil && (c.cfg.Plant != plant.EffectErrorSwallowed || !errors.Is(err, ErrEffectFailed)) {
		return out, err
	}
	if err := c.hit(r, id); err != nil {
		return out, err
	}
	if out.Rejected && c.cfg.Plant == plant.DuplicateOffsetNotCommitted {
		return out, nil
	}
	if err := c.commitOffset(ctx, r); err != nil {
		return out, err
	}
	out.OffsetCommitted = true
	return out, nil
}

// commitOffset commits r's offset + 1 synchronously and emits offset_commit
// (the planted OffsetNotPlusOne commits r's own offset).
func (c *Consumer) commitOffset(ctx context.Context, r *kgo.Record) error {
	next := r.Offset + 1
	if c.cfg.Plant == plant.OffsetNotPlusOne {
		rr := *r
		rr.Offset--
		r, next = &rr, rr.Offset+1
	}
	if err := c.broker("consumer.offset.commit", func() error { return c.cl.CommitRecords(ctx, r) }); err != nil {
		return c.commitFailed([]*kgo.Record{r}, err)
	}
	c.count(func(s *Stats) { s.OffsetsCommitted++ })
	c.settled(r.Topic, r.Partition, next)
	return c.emit(evidence.Event{
		Kind:      evidence.KindOffsetCommit,
		Topic:     r.Topic,
		Partition: evidence.Ptr(r.Partition),
		Offset:    evidence.Ptr(next),
		Consumer:  c.cfg.Group,
	})
}

// hit passes AfterEffectBeforeOffsetCommit. A simulated crash is recorded
// as a fault event and returned wrapped.
func (c *Consumer) hit(r *kgo.Record, id Identity) error {
	p := spec.AfterEffectBeforeOffsetCommit
	err := c.cfg.Faults.Hit(p)
	if err == nil {
		return nil
	}
	detail := fmt.Sprintf("consumer %s crashed at %s of %s (%s/%d@%d)", c.cfg.Member, p, id.EventID, r.Topic, r.Partition, r.Offset)
	if lerr := c.emit(evidence.Event{Kind: evidence.KindFault, Point: string(p), Detail: detail, EventID: id.EventID}); lerr != nil {
		return fmt.Errorf("%s: %w (and recording it failed: %v)", detail, err, lerr)
	}
	return fmt.Errorf("consumer %s at %s: %w", c.cfg.Member, id.EventID, err)
}

func (c *Consumer) emit(e evidence.Event) error {
	e.Actor = c.cfg.Member
	if err := c.cfg.Log.Emit(e); err != nil {
		return fmt.Errorf("consumer %s: record %s: %w", c.cfg.Member, e.Kind, err)
	}
	return nil
}
