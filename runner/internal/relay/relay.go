// Package relay is the outbox relay of the system under test: it claims due
// intents with a token and a lease in one short transaction, publishes each
// to Kafka outside any transaction, and marks it SENT with a compare-and-set
// on that token in a second short transaction. A mark that hits zero rows
// means the lease was lost; it is recorded and returned, never hidden.
//
// Every action emits one event (claim, publish or publish_unknown, mark)
// after its outcome is known: after the commit, after the broker
// acknowledged or refused, or after PublishTimeout without an answer that
// settles it. Only a publish the broker acknowledged is marked: a refused
// or unknown one leaves the row CLAIMED until its lease runs out on the
// database clock, and a relay (this one or another) takes it over and
// publishes it again under the same event id, a duplicate that the
// consumer's inbox absorbs.
//
// claim.go holds the claim, publish.go the publish, queries.go the SQL.
package relay

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Defaults of Config.
const (
	DefaultLease          = 30 * time.Second
	DefaultPublishTimeout = 10 * time.Second
	DefaultBatch          = 16
	DefaultActor          = "relay"
	// DefaultPoll is Run's wait between rounds that found nothing to
	// claim: a committed intent waits at most about that long for a live,
	// idle relay (spec.ClaimWaitSlack bounds the rest).
	DefaultPoll = 100 * time.Millisecond
)

// Config configures a Relay. Zero values take the documented defaults.
type Config struct {
	// DB is the pool of the scenario's database (required).
	DB *sql.DB
	// Client is the producer (required); the caller builds it from
	// infra.Kafka.ClientOpts with ProducerOpts, and closes it.
	Client *kgo.Client
	// Topic receives the records (required).
	Topic string
	// ClaimID is this relay's half of the claim token. Default: "relay-"
	// and 16 random hex digits, unique per relay instance. At most 64
	// characters.
	ClaimID string
	// Lease is how long a claim stays exclusive (default 30s), measured on
	// the database clock.
	Lease time.Duration
	// PublishTimeout bounds one ProduceSync (default 10s).
	PublishTimeout time.Duration
	// Batch is the number of intents RunOnce claims (default 16).
	Batch int
	// Log receives the events; nil records nothing.
	Log *evidence.Log
	// Actor names this relay in the events (default "relay").
	Actor string
	// Faults are the armed fault points; nil injects nothing.
	Faults *fault.Injector
	// Plant is a planted bug (negative control); None is the correct relay.
	Plant plant.Bug
	// Now is the relay's own clock (default time.Now). Leases never use
	// it: they are written and compared on the database clock, so that
	// relays whose clocks disagree make the same decisions (only the
	// planted LeaseOnRelayClock reads it).
	Now func() time.Time
}

var actorRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

func (c *Config) setDefaults() {
	if c.ClaimID == "" {
		c.ClaimID = "relay-" + randomHex(8)
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Actor == "" {
		c.Actor = DefaultActor
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports the first problem of a Config after defaults.
func (c *Config) Validate() error {
	switch {
	case c.DB == nil:
		return errors.New("relay config: DB is required")
	case c.Client == nil:
		return errors.New("relay config: Client is required")
	case c.Topic == "":
		return errors.New("relay config: Topic is required")
	case len(c.ClaimID) > 64:
		return fmt.Errorf("relay config: ClaimID %q longer than 64 characters", c.ClaimID)
	case c.Lease < time.Microsecond:
		return fmt.Errorf("relay config: Lease %v must be at least 1µs", c.Lease)
	case c.PublishTimeout <= 0:
		return fmt.Errorf("relay config: PublishTimeout %v must be positive", c.PublishTimeout)
	case c.Batch < 1:
		return fmt.Errorf("relay config: Batch %d must be positive", c.Batch)
	case !actorRE.MatchString(c.Actor):
		return fmt.Errorf("relay config: Actor %q is not a valid id", c.Actor)
	}
	// A planted bug of another actor is ignored: the relay is correct then.
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Relay moves outbox intents to Kafka. It is safe for concurrent use, but
// one Relay is one claim_id: run two Relays to model two relay processes.
type Relay struct {
	cfg Config
	// polling is the poll of a Run in progress in milliseconds (0: the
	// relay runs rounds only when told, RunOnce): its claims say it.
	polling atomic.Int64
}

// New checks cfg and returns a Relay.
func New(cfg Config) (*Relay, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Relay{cfg: cfg}, nil
}

// ClaimID returns this relay's claim id.
func (r *Relay) ClaimID() string { return r.cfg.ClaimID }

// Actor returns the actor name used in this relay's events.
func (r *Relay) Actor() string { return r.cfg.Actor }

// Result is what one RunOnce did.
type Result struct {
	// Claimed lists every intent claimed in this round, in claim order,
	// including the one a crash interrupted (so that a scenario can later
	// replay the dead relay's stale mark).
	Claimed        []Claimed
	Published      int // acknowledged by the broker
	PublishFailed  int // refused by the broker; the row stays CLAIMED until its lease expires
	PublishUnknown int // outcome unknown (timed out); the row stays CLAIMED until its lease expires
	Marked         int // marks that hit 1 row
	LeaseLost      int // marks that hit 0 rows
	// Crashed is set when an armed fault point simulated a crash; the
	// returned error then wraps fault.ErrCrash.
	Crashed *Claimed
}

// RunOnce claims one batch (Claim: one transaction), hits
// AfterClaimBeforePublish once per intent, publishes the whole batch at
// once and waits for every outcome (PublishBatch), hits
// AfterPublishBeforeMark once per acknowledged intent (and
// TakeoverPublished once when one of them is a takeover), and marks the
// acknowledged intents with one compare-and-set over the batch
// (MarkBatch). A simulated crash at either point stops the round at once:
// nothing else is published or marked, and the error wraps
// fault.ErrCrash; the log is flushed before each point, so that a process
// killed there leaves every event before it. A refused or unknown publish
// is counted and the intent left CLAIMED, unmarked, for a later takeover;
// a lost lease (mark of 0 rows) is counted. A database or log error stops
// the round.
//
// With the planted bug MarkBeforePublish the order is claim, mark, hit
// AfterClaimBeforePublish, publish, hit AfterPublishBeforeMark: a crash at
// AfterClaimBeforePublish leaves the intents SENT and never published.
// With MarkAfterFailedPublish the refused and unknown ones are marked too.
func (r *Relay) RunOnce(ctx context.Context) (Result, error) {
	var res Result
	claims, err := r.Claim(ctx, r.cfg.Batch)
	res.Claimed = claims
	if err != nil || len(claims) == 0 {
		return res, err
	}
	if r.cfg.Plant == plant.MarkBeforePublish {
		if err := r.markAll(ctx, claims, &res); err != nil {
			return res, err
		}
	}
	if err := r.hitEach(spec.AfterClaimBeforePublish, claims, &res); err != nil {
		return res, err
	}
	acked, failed, err := r.publishAll(ctx, claims, &res)
	if err != nil {
		return res, err
	}
	if err := r.hitEach(spec.AfterPublishBeforeMark, acked, &res); err != nil {
		return res, err
	}
	if slices.ContainsFunc(acked, func(c Claimed) bool { return c.StateBefore == evidence.StateClaimed }) {
		// The chaos nemesis may hold a relay here (spec.TakeoverPublished).
		if err := r.cfg.Faults.Hit(spec.TakeoverPublished); err != nil {
			return res, err
		}
	}
	switch r.cfg.Plant {
	case plant.MarkBeforePublish:
		return res, nil
	case plant.MarkAfterFailedPublish:
		acked = append(acked, failed...)
	}
	return res, r.markAll(ctx, acked, &res)
}

// publishAll publishes claims as one batch and sorts them into the
// acknowledged and the failed (refused or unknown), counting both. Any
// other error (the log's), or the end of ctx, is returned and stops the
// round.
func (r *Relay) publishAll(ctx context.Context, claims []Claimed, res *Result) (acked, failed []Claimed, err error) {
	for i, p := range r.PublishBatch(ctx, claims) {
		switch {
		case p.Err == nil:
			res.Published++
			acked = append(acked, claims[i])
			continue
		case ctx.Err() != nil:
			return nil, nil, p.Err
		case errors.Is(p.Err, ErrRefused):
			res.PublishFailed++
		case errors.Is(p.Err, ErrUnknown):
			res.PublishUnknown++
		default:
			return nil, nil, p.Err
		}
		failed = append(failed, claims[i])
	}
	return acked, failed, nil
}

// markAll marks cs with one batch mark and counts the hits and the lost
// leases.
func (r *Relay) markAll(ctx context.Context, cs []Claimed, res *Result) error {
	rows, err := r.MarkBatch(ctx, cs)
	for _, n := range rows {
		if n == 0 {
			res.LeaseLost++
		} else {
			res.Marked++
		}
	}
	return err
}

// hitEach flushes the log (a process killed at p must leave every event
// before it) and passes fault point p once per intent of cs, in order.
// Without an injector nothing can fire, and nothing is flushed.
func (r *Relay) hitEach(p fault.Point, cs []Claimed, res *Result) error {
	if len(cs) == 0 || r.cfg.Faults == nil {
		return nil
	}
	if err := r.cfg.Log.Flush(); err != nil {
		return fmt.Errorf("relay %s before %s: %w", r.cfg.Actor, p, err)
	}
	for _, c := range cs {
		if err := r.hit(p, c, res); err != nil {
			return err
		}
	}
	return nil
}

// hit passes fault point p. A simulated crash is recorded as a fault event
// naming the intent and returned wrapped.
func (r *Relay) hit(p fault.Point, c Claimed, res *Result) error {
	err := r.cfg.Faults.Hit(p)
	if err == nil {
		return nil
	}
	res.Crashed = &c
	if lerr := r.cfg.Log.Emit(evidence.Event{
		Actor:        r.cfg.Actor,
		Kind:         evidence.KindFault,
		Point:        string(p),
		Detail:       fmt.Sprintf("relay %s crashed holding %s (claim_version %d)", r.cfg.ClaimID, c.EventID, c.ClaimVersion),
		EventID:      c.EventID,
		ClaimVersion: evidence.Ptr(c.ClaimVersion),
		ClaimID:      c.ClaimID,
	}); lerr != nil {
		return fmt.Errorf("relay %s at %s: %w (and recording it failed: %v)", r.cfg.Actor, c.EventID, err, lerr)
	}
	return fmt.Errorf("relay %s at %s: %w", r.cfg.Actor, c.EventID, err)
}

// Run calls RunOnce until ctx is done, waiting poll between rounds that
// found nothing to claim. It returns nil when ctx ends, and the first other
// error (including a simulated crash) otherwise.
func (r *Relay) Run(ctx context.Context, poll time.Duration) error {
	if poll <= 0 {
		poll = DefaultPoll
	}
	r.polling.Store(max(poll.Milliseconds(), 1))
	defer r.polling.Store(0)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		res, err := r.RunOnce(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if len(res.Claimed) == 0 {
			t.Reset(poll)
		} else {
			t.Reset(0)
		}
	}
}

// pollMS is the poll a claim logs (poll_ms): Run's, nil outside Run.
func (r *Relay) pollMS() *int64 {
	if ms := r.polling.Load(); ms > 0 {
		return &ms
	}
	return nil
}

// ExpireLease ages the live lease of eventID by SQL (lease_until = NOW(6) -
// 1s, only while the row is CLAIMED), as the clock would after its holder
// died. It emits nothing: the scenario that ages the lease records the
// lease_expired event itself, with the token it knows from the dead relay's
// Claimed and the rows returned here.
func ExpireLease(ctx context.Context, db *sql.DB, eventID string) (rows int64, err error) {
	res, err := db.ExecContext(ctx, qExpireLease, eventID)
	if err != nil {
		return 0, fmt.Errorf("expire lease of %s: %w", eventID, err)
	}
	rows, err = res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("expire lease of %s: rows affected: %w", eventID, err)
	}
	return rows, nil
}

// publishTimeoutMS is the publish timeout a claim logs
// (publish_timeout_ms), at least 1 ms.
func (r *Relay) publishTimeoutMS() int64 {
	return max(r.cfg.PublishTimeout.Milliseconds(), 1)
}
