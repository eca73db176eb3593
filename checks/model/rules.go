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

	// Claim tokens.
	RuleClaimOnLiveLease       Rule = "claim-on-live-lease"
	RuleClaimVersionSkew       Rule = "claim-version-skew"
	RuleClaimStateMismatch     Rule = "claim-state-mismatch"
	RulePublishWithoutClaim    Rule = "publish-without-claim"
	RuleStaleTokenMark         Rule = "stale-token-mark"
	RuleLeaseExpiredNotClaimed Rule = "lease-expired-not-claimed"
	RuleLeaseExpiredMismatch   Rule = "lease-expired-mismatch"

	// Business.
	RuleIntentOutsideOrderTx Rule = "intent-outside-order-tx"
	RuleIntentIDMismatch     Rule = "intent-id-mismatch"
	RuleDuplicateOrder       Rule = "duplicate-order"
	RuleStockMismatch        Rule = "stock-mismatch"
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
		"a mark with rows>=1 with no earlier successful publish of that same claim"},
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
	// Delivery: exactly one effect per event.
	{RuleDuplicateEffect, spec.LayerDelivery, "a second effect for one event_id"},
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
