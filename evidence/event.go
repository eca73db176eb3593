// Package evidence holds the types of the evidence file and of one event-log
// line, with their readers and writers. It is shared by the runner (which
// writes), the verifier in checks/ (which reads and re-derives) and the
// report; it must not import either of them.
package evidence

import (
	"strconv"
	"time"
)

// Kind names what an event records. Each kind lists the fields it carries;
// schemas/event.schema.json enforces them.
type Kind string

// Event kinds. Actors write an event when the outcome of an action is known:
// after the statement returned or the transaction committed, after the
// broker acknowledged.
const (
	// KindSeedStock: the scenario set the stock of a SKU. sku, stock.
	KindSeedStock Kind = "seed_stock"
	// KindSeedOutbox: the scenario inserted an outbox row directly (a decoy
	// whose event_id collides with the next order's intent). event_id,
	// order_id (the aggregate id, -1 for a decoy), state, claim_version,
	// payload_sha256 (sha256 of the row's payload as read back).
	KindSeedOutbox Kind = "seed_outbox"

	// KindOrderCommitted: the order transaction committed. order_id,
	// event_id (the outbox intent it wrote), key, sku, quantity, stock
	// (quantity left after the decrement), status (HTTP), writes (the
	// tables written inside that one transaction, in order).
	KindOrderCommitted Kind = "order_committed"
	// KindOutboxWritten: an outbox intent committed in a transaction of its
	// own, after its order (only the planted bug "outbox-outside-tx" does
	// this). event_id, order_id.
	KindOutboxWritten Kind = "outbox_written"
	// KindOrderRolledBack: the order transaction failed and was rolled
	// back. order_id (the id it had been given, if any), event_id (the
	// intent it tried to write, if any), key, status, err.
	KindOrderRolledBack Kind = "order_rolled_back"
	// KindOrderReplayed: an idempotent replay answered from the stored
	// record, with no writes. order_id, key, status.
	KindOrderReplayed Kind = "order_replayed"
	// KindOrderRejected: the request was refused before or without any
	// write (bad token, missing key, key reused with another body, key in
	// flight, insufficient stock). key, status, reason.
	KindOrderRejected Kind = "order_rejected"

	// KindClaim: a relay claimed an intent. event_id, order_id,
	// claim_version, claim_id, lease_until, state_before (PENDING or
	// CLAIMED); lease_ms (the lease the relay is configured with, when it
	// says so).
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
	// event_id, consumer, topic, partition, offset.
	KindInboxInsert Kind = "inbox_insert"
	// KindInboxReject: the inbox unique key rejected a duplicate; the effect
	// transaction rolled back. event_id, consumer, topic, partition, offset.
	KindInboxReject Kind = "inbox_reject"
	// KindEffect: the effect transaction committed a notification. event_id,
	// order_id, notification_id, consumer.
	KindEffect Kind = "effect"
	// KindOffsetCommit: the consumer group committed an offset (the next
	// offset to read, as Kafka defines it). topic, partition, offset,
	// consumer.
	KindOffsetCommit Kind = "offset_commit"

	// KindObserve: the scenario queried a row's state at a point in time.
	// event_id, state, claim_version.
	KindObserve Kind = "observe"
	// KindFault: a fault was injected at a named point. point, detail.
	KindFault Kind = "fault"
	// KindInvariant: a live invariant query ran. invariant, rows.
	KindInvariant Kind = "invariant"

	// The nemesis actor of the chaos scenario (ActorNemesis) writes the
	// next three, and a fault event (point, detail, target) for each fault
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
)

// ActorNemesis is the actor name of the chaos scenario's nemesis and
// supervisor.
const ActorNemesis = "nemesis"

// Kinds lists every kind, in a stable order.
var Kinds = []Kind{
	KindSeedStock, KindSeedOutbox,
	KindOrderCommitted, KindOutboxWritten, KindOrderRolledBack, KindOrderReplayed, KindOrderRejected,
	KindClaim, KindPublish, KindMark, KindLeaseExpired,
	KindPublishUnknown,
	KindReceive, KindInboxInsert, KindInboxReject, KindEffect, KindOffsetCommit,
	KindObserve, KindFault, KindInvariant,
	KindHeal, KindProcessStart, KindProcessExit,
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
	RecordKey     string `json:"record_key,omitempty"`
	RecordEventID string `json:"record_event_id,omitempty"`
	// Target is what a nemesis event is about: an actor incarnation, a
	// component ("broker", "database") or a link ("relay-1>database").
	Target string `json:"target,omitempty"`
	// PID is the OS process id of a process_start or process_exit.
	PID *int64 `json:"pid,omitempty"`
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
