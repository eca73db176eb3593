// Package sut is the seam between the scenarios and the system under test:
// the interfaces of an order service, a relay and a consumer that the
// scenarios drive, and the features an implementation claims. The layers of
// verifier rules that apply to a run follow from those features (Layers);
// the evidence records them, so that a second implementation of a relay or
// a consumer, ours or a third party's, is audited through the same seam
// with exactly the rules that hold for it (in the spirit of Watermill's
// Pub/Sub test suite and its Features).
//
// Reference is this project's implementation (runner/internal/...).
package sut

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Actor is what every actor gets from the scenario.
type Actor struct {
	// DB is the scenario's database.
	DB *sql.DB
	// Log receives the actor's events (the event log is the actor's claim,
	// which the verifier holds against the witnesses).
	Log *evidence.Log
	// Name names the actor in its events.
	Name string
	// Faults are the armed fault points; nil injects nothing.
	Faults *fault.Injector
	// Plant is a planted bug (a negative control); "" is a clean system.
	Plant plant.Bug
}

// OrdersConfig configures an order service.
type OrdersConfig struct {
	Actor
	// Secret verifies the HS256 bearer tokens.
	Secret []byte
}

// RelayConfig configures a relay.
type RelayConfig struct {
	Actor
	// Client is the producer; the caller builds and closes it.
	Client *kgo.Client
	Topic  string
	// ClaimID is the relay's half of the claim token.
	ClaimID string
	// Lease is how long a claim stays exclusive (0: the relay's default).
	Lease time.Duration
	// PublishTimeout bounds one publish (0: the relay's default).
	PublishTimeout time.Duration
	// Batch is the number of intents one RunOnce claims, publishes and
	// marks together (0: the relay's default).
	Batch int
	// Now is the relay's own clock (nil: time.Now). A relay that keeps its
	// leases on the database clock decides the same whatever it says.
	Now func() time.Time
}

// ConsumerConfig configures one member of a consumer group.
type ConsumerConfig struct {
	Actor
	ClientOpts []kgo.Opt
	Topic      string
	Group      string
	// Inbox is the consumer name of its inbox rows.
	Inbox string
	// Batch settles the records of a poll together (the batched consumer:
	// spec.ModeBatch, a scenario's batch variant); false settles each
	// record on its own.
	Batch bool
}

// OrderService serves POST /orders.
type OrderService interface {
	http.Handler
}

// The relay's and the consumer's values, shared with the reference
// implementation.
type (
	// Claimed is one intent held by a relay, with its claim token.
	Claimed = relay.Claimed
	// RelayResult is what one claim-publish-mark round did.
	RelayResult = relay.Result
	// ConsumerStats counts what a consumer did.
	ConsumerStats = consumer.Stats
	// Outcome is what a consumer did with one record handed to it.
	Outcome = consumer.Outcome
)

// Relay moves outbox intents to the broker. Claim, Publish and Mark drive
// one step at a time (spec.FeatureStepwiseRelay); RunOnce does a round.
type Relay interface {
	ClaimID() string
	Claim(ctx context.Context, max int) ([]Claimed, error)
	Publish(ctx context.Context, c Claimed) (partition int32, offset int64, err error)
	Mark(ctx context.Context, c Claimed) (rows int64, err error)
	RunOnce(ctx context.Context) (RelayResult, error)
	// Run does rounds until ctx ends, waiting poll between rounds that
	// found nothing (0: the relay's default); it returns nil when ctx
	// ends.
	Run(ctx context.Context, poll time.Duration) error
}

// Consumer is one member of a consumer group that applies records as
// effects.
type Consumer interface {
	Member() string
	// PollUntil polls until done holds for the stats or ctx ends.
	PollUntil(ctx context.Context, done func(ConsumerStats) bool) (ConsumerStats, error)
	// Handle applies one record handed to it (a redelivery).
	Handle(ctx context.Context, r *kgo.Record) (Outcome, error)
	Close()
}

// Implementation is a system under test: its name, its features and its
// constructors.
type Implementation struct {
	Name string
	// Features are what the implementation claims (spec.Feature).
	Features    spec.Features
	NewOrders   func(OrdersConfig) (OrderService, error)
	NewRelay    func(RelayConfig) (Relay, error)
	NewConsumer func(ctx context.Context, cfg ConsumerConfig) (Consumer, error)
	// Source digests the implementation's code as built into this binary
	// (the evidence records it); nil when the implementation cannot say.
	Source func() (evidence.SourceDigest, error)
}
