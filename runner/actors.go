package runner

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Fixed test data: one SKU per scenario database, priced in cents.
const (
	defaultSKU   = "SKU-MSG"
	defaultPrice = 1250
	principal    = "alice"
)

// Orders starts the order service on a loopback HTTP server for this
// scenario and returns a client for it.
func (e *Env) Orders() (*orders.Client, error) { return e.OrdersReplica("orders") }

// OrdersReplica is Orders for another replica of the order service, named
// actor: its own process state (its in-flight guard), the same database.
func (e *Env) OrdersReplica(actor string) (*orders.Client, error) {
	log, err := e.ActorLog(actor)
	if err != nil {
		return nil, err
	}
	svc, err := e.SUT.NewOrders(sut.OrdersConfig{
		Actor: sut.Actor{DB: e.DB, Log: log, Name: actor, Plant: e.Plant, Faults: e.Faults}, Secret: e.Secret,
	})
	if err != nil {
		return nil, err
	}
	srv := httptest.NewServer(svc)
	e.Defer(srv.Close)
	return &orders.Client{BaseURL: srv.URL, HTTP: &http.Client{Timeout: 10 * time.Second}}, nil
}

// Relay returns a relay of the system under test named actor (its claim id
// is derived from it) with its own fault injector, publishing to topic.
func (e *Env) Relay(actor, topic string, faults *fault.Injector) (sut.Relay, error) {
	return e.RelayWith(actor, topic, faults, nil)
}

// relayRound runs rounds (RunOnce) of a new relay "relay-a" on topic until
// one claims nothing: the intents due are claimed, published and marked,
// an aggregate's later versions in the rounds after its earlier ones.
func (e *Env) relayRound(ctx context.Context, topic string) error {
	r, err := e.Relay("relay-a", topic, nil)
	if err != nil {
		return err
	}
	_, err = runRounds(ctx, r)
	return err
}

// RelayWith is Relay with the configuration changed by mod (a lease, a
// publish timeout, the relay's own clock); the producer is made for it.
func (e *Env) RelayWith(actor, topic string, faults *fault.Injector, mod func(*sut.RelayConfig)) (sut.Relay, error) {
	log, err := e.ActorLog(actor)
	if err != nil {
		return nil, err
	}
	cfg := sut.RelayConfig{
		Actor: sut.Actor{DB: e.DB, Log: log, Name: actor, Faults: faults, Plant: e.Plant},
		Topic: topic, ClaimID: actor + "-" + e.RunID,
	}
	if mod != nil {
		mod(&cfg)
	}
	cl, err := kgo.NewClient(e.Kafka.ClientOpts(relay.ProducerOpts(cfg.PublishTimeout)...)...)
	if err != nil {
		return nil, fmt.Errorf("producer for %s: %w", actor, err)
	}
	e.Defer(cl.Close)
	cfg.Client = cl
	return e.SUT.NewRelay(cfg)
}

// Consumer joins group on topic as member of the system under test,
// writing to the inbox as "notifier".
func (e *Env) Consumer(ctx context.Context, member, topic, group string, faults *fault.Injector) (sut.Consumer, error) {
	return e.ConsumerOf(ctx, member, topic, group, "notifier", faults)
}

// ConsumerOf is Consumer with the inbox consumer name of its rows. It
// runs in the scenario's consumer mode (spec.Scenario.Mode), and refuses
// a scenario whose spec entry does not say it Consumes.
func (e *Env) ConsumerOf(ctx context.Context, member, topic, group, inbox string, faults *fault.Injector) (sut.Consumer, error) {
	if !e.Scenario.Consumes {
		return nil, fmt.Errorf("scenario %s starts a consumer, but its spec entry does not say Consumes: "+
			"it would not run in the batched consumer mode", e.Scenario.ID)
	}
	log, err := e.ActorLog(member)
	if err != nil {
		return nil, err
	}
	c, err := e.SUT.NewConsumer(ctx, sut.ConsumerConfig{
		Actor:      sut.Actor{DB: e.DB, Log: log, Name: member, Faults: faults, Plant: e.Plant},
		ClientOpts: e.Kafka.ClientOpts(), Topic: topic, Group: group, Inbox: inbox,
		Batch: e.Scenario.Mode() == spec.ModeBatch,
	})
	if err != nil {
		return nil, err
	}
	e.Defer(c.Close)
	return c, nil
}

// SeedStock sets the stock of sku at the default price and records it.
func (e *Env) SeedStock(ctx context.Context, sku string, qty int64) error {
	return e.seedPriced(ctx, sku, qty, defaultPrice)
}

// seedPriced sets the stock and unit price of sku and records both.
func (e *Env) seedPriced(ctx context.Context, sku string, qty, priceCents int64) error {
	if _, err := e.DB.ExecContext(ctx,
		`INSERT INTO stock (sku, quantity, price_cents) VALUES (?, ?, ?)`, sku, qty, priceCents); err != nil {
		return fmt.Errorf("seed stock: %w", err)
	}
	return e.Emit(evidence.Event{Kind: evidence.KindSeedStock, SKU: sku, Stock: evidence.Ptr(qty), PriceCents: evidence.Ptr(priceCents)})
}

// outboxRow is a full outbox row, every column, for byte-level comparison.
type outboxRow struct {
	ID, AggregateID, ClaimVersion int64
	EventID, State                string
	AggregateVersion              int
	Payload                       []byte
	ClaimID                       sql.NullString
	LeaseUntil, SentAt            sql.NullTime
	CreatedAt                     time.Time
}

func (e *Env) readOutbox(ctx context.Context, eventID string) (outboxRow, error) {
	var r outboxRow
	err := e.DB.QueryRowContext(ctx, `SELECT id, event_id, aggregate_id, aggregate_version, payload, state,
  claim_version, claim_id, lease_until, created_at, sent_at FROM outbox WHERE event_id = ?`, eventID).Scan(
		&r.ID, &r.EventID, &r.AggregateID, &r.AggregateVersion, &r.Payload, &r.State,
		&r.ClaimVersion, &r.ClaimID, &r.LeaseUntil, &r.CreatedAt, &r.SentAt)
	if err != nil {
		return r, fmt.Errorf("read outbox %s: %w", eventID, err)
	}
	return r, nil
}

func (r outboxRow) equal(o outboxRow) bool {
	return r.ID == o.ID && r.EventID == o.EventID && r.AggregateID == o.AggregateID &&
		r.AggregateVersion == o.AggregateVersion && string(r.Payload) == string(o.Payload) &&
		r.State == o.State && r.ClaimVersion == o.ClaimVersion && r.ClaimID == o.ClaimID &&
		r.LeaseUntil == o.LeaseUntil && r.CreatedAt.Equal(o.CreatedAt) && r.SentAt == o.SentAt
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Observe queries the state of an intent now and records it.
func (e *Env) Observe(ctx context.Context, eventID string) (string, error) {
	r, err := e.readOutbox(ctx, eventID)
	if err != nil {
		return "", err
	}
	return r.State, e.Emit(evidence.Event{
		Kind: evidence.KindObserve, EventID: eventID, State: r.State,
		ClaimVersion: evidence.Ptr(r.ClaimVersion), OrderID: evidence.Ptr(r.AggregateID),
		PayloadSHA256: sha256Hex(r.Payload),
	})
}

// ExpireLease ages the lease of c by SQL and records it.
func (e *Env) ExpireLease(ctx context.Context, c sut.Claimed) (int64, error) {
	n, err := relay.ExpireLease(ctx, e.DB, c.EventID)
	if err != nil {
		return 0, err
	}
	return n, e.Emit(evidence.Event{
		Kind: evidence.KindLeaseExpired, EventID: c.EventID, ClaimVersion: evidence.Ptr(c.ClaimVersion),
		ClaimID: c.ClaimID, Rows: evidence.Ptr(n),
	})
}

// Records reads every record of topic from the start with a plain
// (group-less) client: what the broker holds, independent of any consumer.
func (e *Env) Records(ctx context.Context, topic string, want int) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(e.Kafka.ClientOpts(
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("read %s: got %d of %d records: %w", topic, len(out), want, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return out, fmt.Errorf("read %s: %w", topic, errs[0].Err)
		}
		out = append(out, fs.Records()...)
	}
	return out, nil
}

// Count runs SELECT COUNT(*) FROM table [WHERE cond].
func (e *Env) Count(ctx context.Context, table, where string, args ...any) (int64, error) {
	q := "SELECT COUNT(*) FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	return e.QueryInt(ctx, q, args...)
}

// pollWait bounds how long a scenario waits for the consumer: a record that
// never arrives (a lost effect, a planted bug) must end in a failed
// scenario with its figures, not in a hung run.
const pollWait = 5 * time.Second

// poll polls c until cond holds or pollWait passes. Running out of time is
// not an error: the caller computes its figures from what did happen.
func (e *Env) poll(ctx context.Context, c sut.Consumer, cond func(sut.ConsumerStats) bool) (sut.ConsumerStats, error) {
	pctx, cancel := context.WithTimeout(ctx, pollWait)
	defer cancel()
	st, err := c.PollUntil(pctx, cond)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		e.Result.Failf("consumer %s: condition not reached within %v (stats %+v)", c.Member(), pollWait, st)
		return st, nil
	}
	return st, err
}

// startChain prepares a chain scenario: its topic, stock 10 (or more, for
// n > 10), the order service, and n committed orders keyed prefix-1..n.
func (e *Env) startChain(ctx context.Context, prefix string, n int) (string, []*orders.PlaceResponse, error) {
	topic, err := e.Topic(ctx, "")
	if err != nil {
		return "", nil, err
	}
	if err := e.SeedStock(ctx, defaultSKU, int64(max(10, n))); err != nil {
		return "", nil, err
	}
	cl, err := e.Orders()
	if err != nil {
		return "", nil, err
	}
	placed := make([]*orders.PlaceResponse, n)
	for i := range placed {
		if placed[i], err = e.placeCommitted(ctx, cl, fmt.Sprintf("%s-%d", prefix, i+1)); err != nil {
			return "", nil, err
		}
	}
	return topic, placed, nil
}

// afterTakeover is what a takeover scenario measures at its end: a fresh
// consumer reads every record of the topic (both publishes of eventID, and
// any extra one); then the effects of eventID are counted and its final
// state observed.
type afterTakeover struct {
	deliveries, effects int64
	state               string
}

func (e *Env) measureTakeover(ctx context.Context, topic, eventID string) (afterTakeover, error) {
	var m afterTakeover
	c, err := e.Consumer(ctx, "consumer-1", topic, "notify-"+e.RunID, nil)
	if err != nil {
		return m, err
	}
	st, err := e.drain(ctx, c, topic)
	if err != nil {
		return m, err
	}
	m.deliveries = int64(st.Received)
	if m.effects, err = e.Count(ctx, "notification", "event_id = ?", eventID); err != nil {
		return m, err
	}
	m.state, err = e.Observe(ctx, eventID)
	return m, err
}

// consumeAll drains topic with consumer-1 of a fresh group, then counts the
// SENT intents and the effects.
func (e *Env) consumeAll(ctx context.Context, topic string) (sent, effects int64, err error) {
	c, err := e.Consumer(ctx, "consumer-1", topic, "notify-"+e.RunID, nil)
	if err != nil {
		return 0, 0, err
	}
	if _, err := e.drain(ctx, c, topic); err != nil {
		return 0, 0, err
	}
	if sent, err = e.Count(ctx, "outbox", "state = 'SENT'"); err != nil {
		return 0, 0, err
	}
	effects, err = e.Count(ctx, "notification", "")
	return sent, effects, err
}

// drain polls c until it has received every record that topic holds now
// (its end offsets), so that counts taken afterwards cannot miss a record
// that was published but not yet delivered, such as an extra publish. c must
// read the topic from its start (a new group).
func (e *Env) drain(ctx context.Context, c sut.Consumer, topic string) (sut.ConsumerStats, error) {
	end, err := e.Kafka.EndOffset(ctx, topic)
	if err != nil {
		return sut.ConsumerStats{}, err
	}
	return e.poll(ctx, c, func(s sut.ConsumerStats) bool { return int64(s.Received) >= end })
}

// rolledBackOn tells whether the order service logged a rollback of the
// intent eventID caused by a duplicate key (MySQL error 1062).
func (e *Env) rolledBackOn(eventID string) (bool, error) {
	es, err := evidence.ReadEvents(filepath.Join(e.logDir, "orders.jsonl"))
	if err != nil {
		return false, err
	}
	for _, ev := range es {
		if ev.Kind == evidence.KindOrderRolledBack && ev.EventID == eventID && strings.Contains(ev.Err, "1062") {
			return true, nil
		}
	}
	return false, nil
}
