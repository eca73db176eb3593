// Package evidence holds the types of the evidence file and of one event-log
// line, with their readers and writers. It is shared by the runner (which
// writes), the verifier in checks/ (which reads and re-derives) and the
// report; it must not import either of them.
package evidence

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind names what an event records. Each kind lists the fields it carries;
// schemas/event.schema.json enforces them.
type Kind string

// Event kinds. Actors write an event when the outcome of an action is known:
// after the statement returned or the transaction committed, after the
// broker acknowledged.
const (
	// KindSeedStock: the scenario set the stock of a SKU. sku, stock;
	// price_cents (its unit price, when the scenario says so).
	KindSeedStock Kind = "seed_stock"
	// KindSeedOutbox: the scenario inserted an outbox row directly (a decoy
	// whose event_id collides with the next order's intent). event_id,
	// order_id (the aggregate id, -1 for a decoy), state, claim_version,
	// payload_sha256 (sha256 of the row's payload as read back).
	KindSeedOutbox Kind = "seed_outbox"

	// KindOrderCommitted: the order transaction committed. order_id,
	// event_id (the outbox intent it wrote), key, sku, quantity, stock
	// (the first line's SKU, the order's total quantity, the stock of that
	// SKU left after its decrement), status (HTTP), writes (the tables
	// written inside that one transaction, in order); principal, lines
	// (every line as written: "quantity=<n> price_cents=<unit price>
	// stock=<left> sku=<sku>") and amount_cents, when the service says
	// so (logs of older versions do not).
	KindOrderCommitted Kind = "order_committed"
	// KindOutboxWritten: an outbox intent committed in a transaction of its
	// own, after its order (only the planted bug "outbox-outside-tx" does
	// this). event_id, order_id.
	KindOutboxWritten Kind = "outbox_written"
	// KindOrderAdvanced: an order moved on to its next status and the
	// intent of that status change was written in the same transaction.
	// order_id, event_id (e-<order_id>-v<aggregate_version>),
	// aggregate_version (2 or more: the order's placement is 1),
	// order_status (the status written), writes (orders, outbox).
	KindOrderAdvanced Kind = "order_advanced"
	// KindOrderRolledBack: the order transaction failed and was rolled
	// back. order_id (the id it had been given, if any), event_id (the
	// intent it tried to write, if any), key, status, err; principal.
	KindOrderRolledBack Kind = "order_rolled_back"
	// KindOrderReplayed: an idempotent replay answered from the stored
	// record, with no writes. order_id, key, status; principal (whom it
	// answered).
	KindOrderReplayed Kind = "order_replayed"
	// KindOrderRejected: the request was refused before or without any
	// write (bad token, missing key, key reused with another body, key in
	// flight, insufficient stock). key, status, reason; principal (once
	// the token named one).
	KindOrderRejected Kind = "order_rejected"
	// KindOrderRequest: the client's own record of one POST /orders,
	// written by the scenario driver once the answer arrived, so that what
	// the client sent and got is on record apart from the order service's
	// claims. principal (the subject its token names; absent without a
	// token), key, lines (what it asked for, "quantity=<n> sku=<sku>"),
	// token_alg, token_key and token_claims (the token it sent: its alg
	// header, which key signed it, its claims as JSON; absent without a
	// token), status (the answer), order_id (the order a 201 names),
	// payload_sha256 (the sha256 of the answer's body, byte for byte);
	// a generated request also auth_prefix, key_headers and request_body
	// (what was sent, raw). A generated request of the chaos load that got
	// no answer has err (the transport error) instead of status.
	KindOrderRequest Kind = "order_request"

	// KindClaim: a relay claimed an intent. event_id, order_id,
	// claim_version, claim_id, lease_until, state_before (PENDING or
	// CLAIMED); lease_ms (the lease the relay is configured with, when it
	// says so); batch (the most rows the claim's round may take: the
	// relay's batch, when it says so); publish_timeout_ms (the time the
	// round's publish of its batch ends within, when it says so); poll_ms
	// (the wait between rounds that found nothing, for a relay polling in
	// a loop).
	KindClaim Kind = "claim"
	// KindPublish: the broker acknowledged (or refused) a record. event_id,
	// claim_version, claim_id, topic, and partition+offset on success or
	// err on a refusal (the broker answered that it did not append it);
	// record_key and record_event_id (what the record carried, when the
	// relay says so).
	KindPublish Kind = "publish"
	// KindPublishUnknown: a publish whose outcome the relay cannot know:
	// no answer within its timeout, or an answer that the broker gives
	// also after appending (REQUEST_TIMED_OUT). The record may or may not
	// be in the log. Neither a success nor a refusal. event_id,
	// claim_version, claim_id, topic, err; record_key and record_event_id
	// as for publish.
	KindPublishUnknown Kind = "publish_unknown"
	// KindMark: the compare-and-set to SENT returned. event_id,
	// claim_version, claim_id, rows (affected rows: 1 or 0).
	KindMark Kind = "mark"
	// KindLeaseExpired: a lease was expired by SQL (the scenario ages it, as
	// the clock would after a relay died). event_id, claim_version,
	// claim_id, rows.
	KindLeaseExpired Kind = "lease_expired"

	// KindReceive: the consumer received a record from the broker.
	// event_id, order_id, topic, partition, offset, consumer (group).
	KindReceive Kind = "receive"
	// KindInboxInsert: the effect transaction committed an inbox row.
	// event_id, consumer, topic, partition, offset; inbox_key (the event
	// id column the row was written with, when the consumer says so);
	// trx_id (the database transaction that wrote it, when known).
	KindInboxInsert Kind = "inbox_insert"
	// KindInboxReject: the inbox unique key rejected a duplicate; the effect
	// transaction rolled back. event_id, consumer, topic, partition, offset;
	// inbox_key as for inbox_insert.
	KindInboxReject Kind = "inbox_reject"
	// KindEffect: the effect transaction committed a notification. event_id,
	// order_id, notification_id, consumer; trx_id (the database transaction
	// that wrote it, when known).
	KindEffect Kind = "effect"
	// KindEffectRolledBack: a statement of the effect transaction, or its
	// COMMIT, was answered with an error: the transaction rolled back as a
	// whole (no inbox row, no notification) and the record is not settled.
	// event_id, consumer, topic, partition, offset, err.
	KindEffectRolledBack Kind = "effect_rolled_back"
	// KindCommitUnknown: the COMMIT of the effect transaction got no answer
	// (its connection died): it may or may not have committed. Neither a
	// rollback nor a success; the record is not settled and is replayed,
	// and the inbox decides. event_id, consumer, topic, partition, offset,
	// err.
	KindCommitUnknown Kind = "commit_unknown"
	// KindOffsetCommit: the consumer group committed an offset (the next
	// offset to read, as Kafka defines it). topic, partition, offset,
	// consumer.
	KindOffsetCommit Kind = "offset_commit"
	// KindGroupJoin: the member's client was created and the broker
	// answered; it starts joining its group (the join completes with its
	// first partition_assigned, maybe of none). consumer (group), topic.
	KindGroupJoin Kind = "group_join"
	// KindPartitionAssigned: the group assigned a partition to this
	// member (kgo's OnPartitionsAssigned, one event per partition).
	// topic, partition, consumer (group).
	KindPartitionAssigned Kind = "partition_assigned"
	// KindPartitionRevoked: this member gave a partition up in a
	// rebalance or as it left the group (OnPartitionsRevoked), having
	// settled and committed what it polled of it. topic, partition,
	// consumer.
	KindPartitionRevoked Kind = "partition_revoked"
	// KindPartitionLost: this member found that the group had taken a
	// partition from it (OnPartitionsLost: its session expired, it was
	// fenced); it may already have another owner. topic, partition,
	// consumer.
	KindPartitionLost Kind = "partition_lost"

	// KindObserve: the scenario queried a row's state at a point in time.
	// event_id, state, claim_version.
	KindObserve Kind = "observe"
	// KindFault: a fault was injected at a named point. point, detail.
	KindFault Kind = "fault"
	// KindInvariant: a live invariant query ran. invariant, rows.
	KindInvariant Kind = "invariant"

	// The nemesis actor of the chaos scenario (ActorNemesis) writes the
	// next four, and a fault event (point, detail, target) for each fault
	// it injects.

	// KindHeal: the nemesis ended a fault it had injected. point (the
	// fault's), target, detail (what the fault did meanwhile, such as how
	// many requests the broker failed).
	KindHeal Kind = "heal"
	// KindProcessStart: the supervisor started an actor process. target
	// (the actor name of this incarnation, which names its log), pid,
	// detail (the slot and why: first start, or restart after what).
	KindProcessStart Kind = "process_start"
	// KindProcessExit: an actor process ended. target, pid, detail (how:
	// "killed by signal 9 (killed)", "exit 1: <its last error>").
	KindProcessExit Kind = "process_exit"
	// KindFaultSkipped: the nemesis drew a fault and found nothing to hit
	// (no process in the slot, no open transaction, no server of the
	// run's own): point, target, detail (why). It is not a fault event:
	// nothing was injected, and the proof-boundary matrix says so.
	KindFaultSkipped Kind = "fault_skipped"

	// KindCallFailed: an actor's record of one of its database or broker
	// calls that failed and that no other event records (the consumer's
	// fetch and offset commit): target (the call's site, as the call hook
	// names it), reason (the outcome the actor read: answered, the call
	// did not take effect; unknown, it may have), err, detail. It is not
	// a fault event: nothing is injected by recording it.
	KindCallFailed Kind = "call_failed"
)

// ActorNemesis is the actor name of the chaos scenario's nemesis and
// supervisor.
const ActorNemesis = "nemesis"

// Kinds lists every kind, in a stable order.
var Kinds = []Kind{
	KindSeedStock, KindSeedOutbox,
	KindOrderCommitted, KindOutboxWritten, KindOrderRolledBack, KindOrderReplayed, KindOrderRejected, KindOrderRequest,
	KindClaim, KindPublish, KindMark, KindLeaseExpired,
	KindPublishUnknown,
	KindReceive, KindInboxInsert, KindInboxReject, KindEffect, KindOffsetCommit,
	KindOrderAdvanced, KindEffectRolledBack, KindCommitUnknown,
	KindObserve, KindFault, KindInvariant,
	KindHeal, KindProcessStart, KindProcessExit, KindFaultSkipped,
	KindPartitionAssigned, KindPartitionRevoked, KindPartitionLost, KindGroupJoin, KindCallFailed,
}

// Event is one line of an event log. Numbers that may legitimately be zero
// are pointers so that "absent" and "0" stay different.
type Event struct {
	Seq      int64     `json:"seq"`
	Time     time.Time `json:"time"`
	RunID    string    `json:"run_id"`
	Scenario string    `json:"scenario"`
	Actor    string    `json:"actor"`
	Kind     Kind      `json:"kind"`

	EventID        string     `json:"event_id,omitempty"`
	OrderID        *int64     `json:"order_id,omitempty"`
	ClaimVersion   *int64     `json:"claim_version,omitempty"`
	ClaimID        string     `json:"claim_id,omitempty"`
	LeaseUntil     *time.Time `json:"lease_until,omitempty"`
	StateBefore    string     `json:"state_before,omitempty"`
	State          string     `json:"state,omitempty"`
	Rows           *int64     `json:"rows,omitempty"`
	Topic          string     `json:"topic,omitempty"`
	Partition      *int32     `json:"partition,omitempty"`
	Offset         *int64     `json:"offset,omitempty"`
	Consumer       string     `json:"consumer,omitempty"`
	NotificationID *int64     `json:"notification_id,omitempty"`
	Key            string     `json:"key,omitempty"`
	SKU            string     `json:"sku,omitempty"`
	Quantity       *int64     `json:"quantity,omitempty"`
	Stock          *int64     `json:"stock,omitempty"`
	Status         int        `json:"status,omitempty"`
	Reason         string     `json:"reason,omitempty"`
	Writes         []string   `json:"writes,omitempty"`
	PayloadSHA256  string     `json:"payload_sha256,omitempty"`
	Point          string     `json:"point,omitempty"`
	Detail         string     `json:"detail,omitempty"`
	Invariant      string     `json:"invariant,omitempty"`
	Err            string     `json:"err,omitempty"`
	// Appended fields (kept last so that the order of the older ones
	// does not move).
	LeaseMS       *int64 `json:"lease_ms,omitempty"`
	Batch         *int64 `json:"batch,omitempty"`
	RecordKey     string `json:"record_key,omitempty"`
	RecordEventID string `json:"record_event_id,omitempty"`
	// The order service's business fields: the user a request was made
	// for, the lines of an order (OrderLine's text), its amount, a SKU's
	// seeded unit price, and the token a client sent.
	Principal   string   `json:"principal,omitempty"`
	Lines       []string `json:"lines,omitempty"`
	AmountCents *int64   `json:"amount_cents,omitempty"`
	PriceCents  *int64   `json:"price_cents,omitempty"`
	TokenAlg    string   `json:"token_alg,omitempty"`
	TokenKey    string   `json:"token_key,omitempty"`
	TokenClaims string   `json:"token_claims,omitempty"`
	// The raw request of a generated order_request (runner/genload), for
	// the reference model of the contract: AuthPrefix is the
	// Authorization header as sent with the token (if any) cut off its
	// end ("" with a token: "Bearer "; without one, the whole header, ""
	// when absent), KeyHeaders the Idempotency-Key values as sent, and
	// RequestBody the body, byte for byte. A generated request always
	// has one of the three (HasRawRequest).
	AuthPrefix  string   `json:"auth_prefix,omitempty"`
	KeyHeaders  []string `json:"key_headers,omitempty"`
	RequestBody string   `json:"request_body,omitempty"`
	// AggregateVersion is the version of an intent within its aggregate
	// (order_advanced); OrderStatus the order status it wrote.
	AggregateVersion *int64 `json:"aggregate_version,omitempty"`
	OrderStatus      string `json:"order_status,omitempty"`
	// InboxKey is the event id column an inbox row was written (or
	// rejected) under; TrxID the database transaction that wrote a row.
	InboxKey string `json:"inbox_key,omitempty"`
	TrxID    string `json:"trx_id,omitempty"`
	// Target is what a nemesis event is about: an actor incarnation, a
	// component ("broker", "database") or a link ("relay-1>database").
	Target string `json:"target,omitempty"`
	// PID is the OS process id of a process_start or process_exit.
	PID *int64 `json:"pid,omitempty"`
	// PublishTimeoutMS and PollMS are a claiming relay's bounds (claim):
	// the publish timeout its round's publish of the batch ends within,
	// and the wait between its rounds that found nothing to claim (only a
	// relay that polls in a loop says it).
	PublishTimeoutMS *int64 `json:"publish_timeout_ms,omitempty"`
	PollMS           *int64 `json:"poll_ms,omitempty"`
}

// HasRawRequest reports whether e is the client's record of a generated
// request, with its raw request (auth_prefix, key_headers, request_body):
// the generator never sends a request without an Authorization header,
// an Idempotency-Key and a body all at once.
func (e *Event) HasRawRequest() bool {
	return e.AuthPrefix != "" || len(e.KeyHeaders) > 0 || e.RequestBody != ""
}

// Ptr returns a pointer to v, for the optional numeric fields.
func Ptr[T any](v T) *T { return &v }

// Outbox states.
const (
	StatePending = "PENDING"
	StateClaimed = "CLAIMED"
	StateSent    = "SENT"
)

// Tables written by the order transaction, as listed in
// order_committed.writes.
const (
	WriteStock       = "stock"
	WriteOrders      = "orders"
	WriteOrderLines  = "order_lines"
	WriteIdempotency = "idempotency_records"
	WriteOutbox      = "outbox"
)

// EventIDFor is the outbox event id of an order's intent.
func EventIDFor(orderID int64) string { return "e-" + strconv.FormatInt(orderID, 10) }

// OrderLine is one line of an order as the events carry it (the lines
// field): "quantity=<n> sku=<sku>" as a client asked for it, and
// "quantity=<n> price_cents=<unit price> stock=<left> sku=<sku>" as the
// order transaction wrote it. The SKU comes last and runs to the end, so
// that any SKU reads back unchanged.
type OrderLine struct {
	SKU      string
	Quantity int64
	// PriceCents is the unit price and Stock the SKU's stock left after
	// the line's decrement; nil in a request line.
	PriceCents, Stock *int64
}

// String is the line's text in the lines field.
func (l OrderLine) String() string {
	s := "quantity=" + strconv.FormatInt(l.Quantity, 10)
	if l.PriceCents != nil && l.Stock != nil {
		s += " price_cents=" + strconv.FormatInt(*l.PriceCents, 10) + " stock=" + strconv.FormatInt(*l.Stock, 10)
	}
	return s + " sku=" + l.SKU
}

// ParseOrderLine reads a line of the lines field (the inverse of String).
func ParseOrderLine(s string) (OrderLine, error) {
	var l OrderLine
	rest := s
	field := func(name string) (int64, bool) {
		v, after, ok := strings.Cut(strings.TrimPrefix(rest, name+"="), " ")
		if !ok || !strings.HasPrefix(rest, name+"=") {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		rest = after
		return n, true
	}
	q, ok := field("quantity")
	if !ok {
		return l, fmt.Errorf("order line %q: no quantity=<n> first", s)
	}
	l.Quantity = q
	if strings.HasPrefix(rest, "price_cents=") {
		p, ok1 := field("price_cents")
		st, ok2 := field("stock")
		if !ok1 || !ok2 {
			return l, fmt.Errorf("order line %q: price_cents=<n> must be followed by stock=<n>", s)
		}
		l.PriceCents, l.Stock = &p, &st
	}
	sku, ok := strings.CutPrefix(rest, "sku=")
	if !ok || sku == "" {
		return l, fmt.Errorf("order line %q: no sku=<sku> last", s)
	}
	l.SKU = sku
	return l, nil
}

// EventIDForVersion is the outbox event id of version v of an order's
// intents: e-<orderId> for its placement (v 1), e-<orderId>-v<v> after.
func EventIDForVersion(orderID, v int64) string {
	if v <= 1 {
		return EventIDFor(orderID)
	}
	return EventIDFor(orderID) + "-v" + strconv.FormatInt(v, 10)
}

// NotificationBody is the body of the notification the reference consumer
// writes for an event: the effect's text names the order and the event it
// was built from, and the verifier derives it from the row's own order_id
// and event_id (a body built from the wrong field shows).
func NotificationBody(orderID int64, eventID string) string {
	return "order " + strconv.FormatInt(orderID, 10) + " placed (event " + eventID + ")"
}
