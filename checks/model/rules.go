package model

import "github.com/orderflow-audit/orderflow-audit/spec"

// Rule is the stable id of a rule of the replay model; a violation names
// it, and testdata/histories/<rule>/ holds a history that breaks it.
type Rule string

// The rules, by layer (see Rules for what each one forbids).
const (
	// Delivery and effect.
	RuleUnknownIntent         Rule = "unknown-intent"
	RuleDuplicateIntent       Rule = "duplicate-intent"
	RuleIntentMismatch        Rule = "intent-mismatch"
	RuleImpossibleRows        Rule = "impossible-rows"
	RuleDuplicateRecord       Rule = "duplicate-record"
	RuleSentWithoutPublish    Rule = "sent-without-publish"
	RuleRecordMismatch        Rule = "record-mismatch"
	RuleReceiveWithoutPublish Rule = "receive-without-publish"
	RuleDuplicateInbox        Rule = "duplicate-inbox"
	RuleRejectWithoutInbox    Rule = "reject-without-inbox"
	RuleInboxRecordMismatch   Rule = "inbox-record-mismatch"
	RuleEffectWithoutInbox    Rule = "effect-without-inbox"
	RuleDuplicateEffect       Rule = "duplicate-effect"
	RuleDuplicateNotification Rule = "duplicate-notification"
	RuleOffsetBeforeEffect    Rule = "offset-before-effect"
	RuleOffsetNotReceived     Rule = "offset-not-received"
	RuleObserveMismatch       Rule = "observe-mismatch"
	RuleFaultUndeclared       Rule = "fault-undeclared"
	RuleFaultMismatch         Rule = "fault-mismatch"
	// Delivery, publish outcomes and record identity.
	RuleReceiveBeforePublish   Rule = "receive-before-publish"
	RuleMarkAfterFailedPublish Rule = "mark-after-failed-publish"
	RulePublishKeyMismatch     Rule = "publish-key-mismatch"
	RulePublishEventIDMismatch Rule = "publish-event-id-mismatch"
	// Delivery, consumer offsets, per-key order and the effect transaction.
	RuleOffsetBackwards          Rule = "offset-backwards"
	RuleOffsetSkipsRecord        Rule = "offset-skips-record"
	RuleOffsetOffByOne           Rule = "offset-off-by-one"
	RuleOffsetLag                Rule = "offset-lag"
	RuleSettledNotCommitted      Rule = "settled-not-committed"
	RuleReceiveOutOfOrder        Rule = "receive-out-of-order"
	RuleReceiveOutOfVersion      Rule = "receive-out-of-version"
	RuleEffectOutOfOrder         Rule = "effect-out-of-order"
	RuleAggregateOnTwoPartitions Rule = "aggregate-on-two-partitions"
	RuleEffectOutsideInboxTx     Rule = "effect-outside-inbox-tx"
	RuleDedupeWrongKey           Rule = "dedupe-wrong-key"
	// Delivery, liveness of the consumer group.
	RulePartitionUnownedTooLong Rule = "partition-unowned-too-long"

	// Claim tokens.
	RuleClaimOnLiveLease       Rule = "claim-on-live-lease"
	RuleClaimVersionSkew       Rule = "claim-version-skew"
	RuleClaimStateMismatch     Rule = "claim-state-mismatch"
	RulePublishWithoutClaim    Rule = "publish-without-claim"
	RuleStaleTokenMark         Rule = "stale-token-mark"
	RuleLeaseExpiredNotClaimed Rule = "lease-expired-not-claimed"
	RuleLeaseExpiredMismatch   Rule = "lease-expired-mismatch"
	RuleLeaseOffClaim          Rule = "lease-off-claim"
	RuleTakeoverOldLease       Rule = "takeover-old-lease"
	RulePublishPastTimeout     Rule = "publish-past-timeout"

	// Business.
	RuleIntentOutsideOrderTx Rule = "intent-outside-order-tx"
	RuleIntentIDMismatch     Rule = "intent-id-mismatch"
	RuleDuplicateOrder       Rule = "duplicate-order"
	RuleStockMismatch        Rule = "stock-mismatch"
	RuleAmountMismatch       Rule = "amount-mismatch"
	RuleLinesMismatch        Rule = "lines-mismatch"
	RuleAnswerOffContract    Rule = "answer-off-contract"
	RuleWriteOffContract     Rule = "write-off-contract"
	RuleCrossPrincipalAnswer Rule = "cross-principal-answer"
	RuleBadTokenAccepted     Rule = "bad-token-accepted"
	RuleCreatedOnRollback    Rule = "created-on-rollback"
)

// RuleInfo describes a rule: the layer it belongs to and, in one line,
// what breaks it.
type RuleInfo struct {
	Rule        Rule
	Layer       spec.Layer
	Description string
}

// Rules is every rule of the model. A rule's layer is decided by what the
// rule assumes of the system under test (the comment above each entry):
// a rule that reads claim versions, claim ids or leases needs a relay that
// has them (claim-token); a rule about orders, stock, idempotency or this
// order service's conventions needs that service (business); the rest hold
// for any outbox pipeline (delivery). The scenario harness's own rules
// (observe-mismatch, fault-undeclared, fault-mismatch) hold whatever the
// system under test is, so they are filed under the base layer, delivery.
var Rules = []RuleInfo{
	// Delivery: an outbox row can only be moved once it exists, whatever the relay.
	{RuleUnknownIntent, spec.LayerDelivery,
		"a claim, publish, mark or lease_expired of an event id that no order_committed, seed_outbox or outbox_written created"},
	// Delivery: every outbox has a unique event_id (the dedupe key downstream).
	{RuleDuplicateIntent, spec.LayerDelivery, "a second intent with one event_id (the unique key forbids it)"},
	// Delivery: every outbox row carries its aggregate id, and so does what is made of it.
	{RuleIntentMismatch, spec.LayerDelivery,
		"a claim, publish, mark, lease_expired, receive or effect whose order_id differs from the intent's aggregate id"},
	// Delivery: any relay updates a row by its unique event_id.
	{RuleImpossibleRows, spec.LayerDelivery, "a mark or lease_expired reporting more than one row (event_id is unique)"},
	// Delivery: a broker property, whatever publishes.
	{RuleDuplicateRecord, spec.LayerDelivery, "two successful publishes at one topic/partition/offset"},
	// Delivery: SENT needs a publish, whatever the relay. The publish must
	// be one of the mark's own claim token; a relay without claim tokens
	// logs the zero token on every publish and mark of an event, which
	// makes this "an earlier publish of the event".
	{RuleSentWithoutPublish, spec.LayerDelivery,
		"a mark with rows>=1 with no earlier publish of that same claim (after a refused or unknown one: mark-after-failed-publish)"},
	// Delivery: the broker gives back what was published.
	{RuleRecordMismatch, spec.LayerDelivery, "a record received with another event id than was published (or received before)"},
	// Delivery: the broker gives back only what was published.
	{RuleReceiveWithoutPublish, spec.LayerDelivery, "a received record that no publish produced (end of scenario)"},
	// Delivery: the inbox is unique on (consumer, event_id) in any pipeline.
	{RuleDuplicateInbox, spec.LayerDelivery, "a second inbox_insert for one (consumer, event_id)"},
	// Delivery: the inbox rejects a duplicate only against an existing row.
	{RuleRejectWithoutInbox, spec.LayerDelivery, "an inbox_reject with no inbox row to conflict with"},
	// Delivery: an inbox decision is made for a record the consumer received.
	{RuleInboxRecordMismatch, spec.LayerDelivery,
		"an inbox_insert or inbox_reject naming a record not received with its event id"},
	// Delivery: the effect is guarded by the inbox.
	{RuleEffectWithoutInbox, spec.LayerDelivery, "an effect with no inbox row for its (consumer, event_id)"},
	// Delivery: exactly one effect per event and inbox consumer.
	{RuleDuplicateEffect, spec.LayerDelivery, "a second effect for one event_id by one inbox consumer"},
	// Delivery: an effect's row has its own unique id.
	{RuleDuplicateNotification, spec.LayerDelivery, "a second effect with one notification_id"},
	// Delivery: the offset is committed after the effect (at-least-once).
	{RuleOffsetBeforeEffect, spec.LayerDelivery,
		"an offset_commit covering a received record whose effect or inbox_reject was not recorded yet"},
	// Delivery: a group commits only past what it received.
	{RuleOffsetNotReceived, spec.LayerDelivery,
		"an offset_commit of offset n by a group that never received record n-1"},
	// Delivery (harness): an observed outbox row is in a state the replay
	// produced. For a relay without claim tokens every claim_version is 0.
	{RuleObserveMismatch, spec.LayerDelivery,
		"an observe of a state and claim_version the row never held (end of scenario)"},
	// Delivery (harness): a scenario injects only the faults it declares.
	{RuleFaultUndeclared, spec.LayerDelivery, "a fault event at a point the scenario does not declare"},
	// Delivery (harness): a fault names an event id the history knows. Its
	// claim-token part (a fault naming a claim token that never claimed its
	// event id) is checked only with the claim-token layer on.
	{RuleFaultMismatch, spec.LayerDelivery,
		"a fault event naming an unknown event id, or a claim token that never claimed its event id"},
	// Delivery: the broker hands out only what was appended, and a
	// record exists only after a publish sent it; a publish whose outcome
	// is unknown (publish_unknown) may have appended one record. For a
	// relay without claims a publish cannot be known to be in flight, so
	// only the end of the scenario decides (receive-without-publish).
	{RuleReceiveBeforePublish, spec.LayerDelivery,
		"a record received at an offset no publish had produced, while no publish of its event id was in flight (claimed, no outcome yet) or of unknown outcome"},
	// Delivery: SENT only after the broker acknowledged, whatever the
	// relay: a refused or unknown publish is retried, never marked.
	{RuleMarkAfterFailedPublish, spec.LayerDelivery,
		"a mark with rows>=1 whose claim's last publish before it was refused (publish with err) or of unknown outcome (publish_unknown)"},
	// Delivery: the records of one aggregate share its key (per-key order
	// needs one partition per aggregate). Checked when the publish says
	// what its record carried (record_key or record_event_id).
	{RulePublishKeyMismatch, spec.LayerDelivery,
		"a publish or publish_unknown whose record_key is not the intent's aggregate id in decimal (a record without a key included)"},
	// Delivery: the dedupe key downstream is the intent's event id; a
	// record under another id is a new event to the inbox.
	{RulePublishEventIDMismatch, spec.LayerDelivery,
		"a publish or publish_unknown whose record_event_id (the record's event_id header) is not the claimed intent's event_id"},

	// Delivery: a group's committed offset only moves forward.
	{RuleOffsetBackwards, spec.LayerDelivery, "an offset_commit of a group below the group's previous commit of that partition"},
	// Delivery: a commit of n passes every record below n; the group must
	// have received each (settling them is offset-before-effect).
	{RuleOffsetSkipsRecord, spec.LayerDelivery,
		"an offset_commit of n passing a record of the partition (at or past the group's previous commit) that the group never received"},
	// Delivery: Kafka's committed offset is the next record to read.
	{RuleOffsetOffByOne, spec.LayerDelivery,
		"a member whose last offset_commit on a partition is n, made after it settled the record at n: it must commit n+1 (end of scenario)"},
	// Delivery: a group that consumed a topic ends with nothing left.
	{RuleOffsetLag, spec.LayerDelivery,
		"a group that committed offsets of a topic whose last commit on a partition of it is below the partition's end offset (end of scenario)"},
	// Delivery: a duplicate's offset is committed too, or a restart replays it.
	{RuleSettledNotCommitted, spec.LayerDelivery,
		"a member that settled a record (effect or inbox_reject) and never committed an offset past it, without a fault in its log (end of scenario)"},
	// Delivery: a polled batch is handled in offset order.
	{RuleReceiveOutOfOrder, spec.LayerDelivery,
		"a group's first receive of a record below an offset of that partition the group already received"},
	// Delivery: per-key order reaches the consumer (aggregate_version).
	{RuleReceiveOutOfVersion, spec.LayerDelivery,
		"a group's first receive of a record of an aggregate's version below a version of that aggregate the group already received"},
	// Delivery: effects follow aggregate_version.
	{RuleEffectOutOfOrder, spec.LayerDelivery,
		"an effect for an aggregate's version committed after the effect of a higher version of that aggregate (same inbox consumer)"},
	// Delivery: records keyed by aggregate share its partition.
	{RuleAggregateOnTwoPartitions, spec.LayerDelivery,
		"records of one order on one topic on two partitions (publish or receive)"},
	// Delivery: the inbox row and the effect commit together.
	{RuleEffectOutsideInboxTx, spec.LayerDelivery,
		"an effect whose trx_id differs from the trx_id of its inbox_insert (both said): two transactions"},
	// Delivery: the dedupe key is the event id.
	{RuleDedupeWrongKey, spec.LayerDelivery, "an inbox_insert or inbox_reject whose inbox_key is not its event_id"},
	// Delivery: any consumer group hands a partition on within the
	// group's timeouts (the bounds are spec's, spec/liveness.go).
	{RulePartitionUnownedTooLong, spec.LayerDelivery,
		"a partition without an owner, from its last holder's partition_revoked, partition_lost or process_exit (or the next " +
			"member's group_join, when later) to that member's partition_assigned of it, for longer than spec's bound: " +
			"UnownedAfterLeave after a revoke or a clean exit, UnownedAfterDeath after a loss or a death, lifted under nemesis faults"},

	// Claim token: leases exist only in a relay that claims with them.
	{RuleClaimOnLiveLease, spec.LayerClaimToken,
		"a claim of a SENT row, or of a row whose previous claim's lease was still live and not expired by a lease_expired"},
	// Claim token: claim versions.
	{RuleClaimVersionSkew, spec.LayerClaimToken, "a claim whose claim_version is not the row's + 1"},
	// Claim token: a claim reads the row's state under its lock.
	{RuleClaimStateMismatch, spec.LayerClaimToken, "a claim whose state_before is not the row's state"},
	// Claim token: a relay with tokens publishes only what it claimed.
	{RulePublishWithoutClaim, spec.LayerClaimToken, "a publish with a token that never claimed the row"},
	// Claim token: the compare-and-set to SENT on the token.
	{RuleStaleTokenMark, spec.LayerClaimToken, "a mark with rows>=1 whose token is not the row's current claim"},
	// Claim token: only a claimed row has a lease to expire.
	{RuleLeaseExpiredNotClaimed, spec.LayerClaimToken, "a lease_expired with rows>=1 on a row that is not CLAIMED"},
	// Claim token: a lease belongs to one claim.
	{RuleLeaseExpiredMismatch, spec.LayerClaimToken,
		"a lease_expired with rows>=1 naming another claim than the row's current one"},
	// Claim token: leases are measured on one clock (the database's), from
	// the claim: lease_until is the claim's time plus the configured lease.
	{RuleLeaseOffClaim, spec.LayerClaimToken,
		"a claim whose lease_until is not after its time, or, when it records lease_ms, whose lease_until minus lease_ms is more than 5 s from its time"},
	// Claim token: a takeover holds the row for a lease of its own.
	{RuleTakeoverOldLease, spec.LayerClaimToken,
		"a claim of a CLAIMED row whose lease_until is not later than the previous claim's (the old lease kept)"},
	// Claim token: a round publishes its batch under one timeout, which
	// its claims log (spec.PublishRoundSlack).
	{RulePublishPastTimeout, spec.LayerClaimToken,
		"a claim's first publish or publish_unknown later after the claim than the publish_timeout_ms it logged plus spec's PublishRoundSlack (plus the time nemesis faults overlapped): a publish timeout that grows with the batch"},

	// Business: the order transaction (its writes) is this order service's.
	{RuleIntentOutsideOrderTx, spec.LayerBusiness,
		"an order_committed whose writes lack \"outbox\", or an outbox_written (the intent committed apart)"},
	// Business: event_id = e-<order_id> is this order service's convention.
	{RuleIntentIDMismatch, spec.LayerBusiness,
		"an order_committed or order_rolled_back whose event_id is not e-<order_id>"},
	// Business: orders.
	{RuleDuplicateOrder, spec.LayerBusiness, "a second order_committed for one order id"},
	// Business: stock.
	{RuleStockMismatch, spec.LayerBusiness,
		"orders whose stock values do not chain from the seed by their quantities (end of scenario; ordered by stock)"},
	// Business: an order's amount is what its lines cost.
	{RuleAmountMismatch, spec.LayerBusiness,
		"an order_committed whose amount_cents is not the sum of its lines' quantity x price_cents, or whose line price is not its SKU's seeded price"},
	// Business: an order holds what was asked for.
	{RuleLinesMismatch, spec.LayerBusiness,
		"an order_committed whose lines do not parse or disagree with its sku and quantity, or a 2xx answer whose order's lines are not the ones the client asked for (end of scenario)"},
	// Business: idempotency keys belong to a user.
	{RuleCrossPrincipalAnswer, spec.LayerBusiness,
		"an order_replayed, or a 2xx answer the client recorded, naming an order that another principal committed (the client's: end of scenario)"},
	// Business: the bearer-token policy (spec.TokenAlg, TokenIssuer, TokenAudience).
	{RuleBadTokenAccepted, spec.LayerBusiness,
		"an order_request whose token breaks the policy (none, alg not HS256, not the service's key, no sub or exp, expired more than 2 s before the record, nbf after it, wrong iss or aud) answered other than 401"},
	// Business: the reference model of the contract (spec/orderapi.go), over a generated load.
	{RuleAnswerOffContract, spec.LayerBusiness,
		"a generated request (order_request with request_body) answered other than the contract's reference model allows for what it sent, the key's earlier requests and the stock seeded (end of scenario)"},
	{RuleWriteOffContract, spec.LayerBusiness,
		"under a generated load, an order committed that no allowed answer created, or one whose principal, lines, prices or amount are not its request's at the seeded prices, or orders taking more of a SKU than seeded (end of scenario)"},
	// Business: a 2xx answer stands for a committed order.
	{RuleCreatedOnRollback, spec.LayerBusiness,
		"a 2xx answer the client recorded naming an order whose transaction rolled back, or that no order_committed created (end of scenario)"},
}

// ruleLayer maps each rule to its layer.
var ruleLayer = func() map[Rule]spec.Layer {
	out := make(map[Rule]spec.Layer, len(Rules))
	for _, r := range Rules {
		out[r.Rule] = r.Layer
	}
	return out
}()

// LayerOf returns the layer of rule ("" for a rule the model does not have).
func LayerOf(rule Rule) spec.Layer { return ruleLayer[rule] }
