// Package plant names the bugs that can be planted into the system under
// test, one per switch. They exist only as negative controls: tests and
// `run --plant <bug>` use them to prove that the scenarios and the verifier
// catch what they claim to catch. A planted run is labelled in the evidence.
package plant

import "github.com/orderflow-audit/orderflow-audit/spec"

// Bug is one planted bug; the empty Bug is a clean system.
type Bug string

// The planted bugs.
const (
	None Bug = ""
	// MarkBeforePublish: the relay marks SENT before publishing.
	MarkBeforePublish Bug = "mark-before-publish"
	// MarkWithoutToken: the relay's mark ignores claim_version/claim_id.
	MarkWithoutToken Bug = "mark-without-token"
	// OffsetBeforeEffect: the consumer commits the offset before its effect
	// transaction.
	OffsetBeforeEffect Bug = "offset-before-effect"
	// NoInboxDedupe: the consumer writes the effect without the inbox.
	NoInboxDedupe Bug = "no-inbox-dedupe"
	// OutboxOutsideTx: the order service writes the outbox intent in a
	// transaction of its own after the order commits.
	OutboxOutsideTx Bug = "outbox-outside-tx"
	// ClaimWithoutLock: the relay claims without SKIP LOCKED and without
	// checking the lease.
	ClaimWithoutLock Bug = "claim-without-lock"
	// MarkCASClaimIDOnly: the relay's mark compares claim_id and not
	// claim_version, so a relay's stale mark hits a row it took over again
	// itself.
	MarkCASClaimIDOnly Bug = "mark-cas-claim-id-only"
	// LeaseOnRelayClock: the relay writes lease_until and decides which
	// leases have expired by its own clock (Config.Now), not the
	// database's.
	LeaseOnRelayClock Bug = "lease-on-relay-clock"
	// TakeoverKeepsLease: a claim of a CLAIMED row keeps the row's old
	// lease_until (COALESCE(lease_until, NOW + lease)) instead of a fresh
	// lease.
	TakeoverKeepsLease Bug = "takeover-keeps-lease"
	// ClaimIgnoresLease: the claim takes CLAIMED rows whatever their
	// lease (SKIP LOCKED still skips rows being claimed right now).
	ClaimIgnoresLease Bug = "claim-ignores-lease"
	// MarkAfterFailedPublish: the relay marks SENT after a refused or
	// unknown publish too.
	MarkAfterFailedPublish Bug = "mark-after-failed-publish"
	// RetryNewEventID: a retry (a claim_version above 1) publishes under a
	// new event id (<event_id>.<claim_version>, in the header and the
	// payload), so the inbox cannot recognise the duplicate.
	RetryNewEventID Bug = "retry-new-event-id"
	// PublishWithoutKey: records are published without a key.
	PublishWithoutKey Bug = "publish-without-key"
	// IdemKeyAcrossUsers: the order service looks an idempotency record up
	// by its key alone, so a key another user used replays that user's
	// order.
	IdemKeyAcrossUsers Bug = "idem-key-across-users"
	// TokenAlgNone: the order service accepts unsigned tokens (alg none).
	TokenAlgNone Bug = "token-alg-none"
	// TokenNoExp: the order service accepts tokens without exp.
	TokenNoExp Bug = "token-no-exp"
	// TokenNbfIgnored: the order service checks exp by hand and turns the
	// library's claim checks off, so a token not valid yet passes (and
	// its issuer and audience go unchecked too).
	TokenNbfIgnored Bug = "token-nbf-ignored"
	// TokenIssUnchecked: the order service does not check the issuer.
	TokenIssUnchecked Bug = "token-iss-unchecked"
	// TokenAudUnchecked: the order service does not check the audience.
	TokenAudUnchecked Bug = "token-aud-unchecked"
	// AmountIgnoresQuantity: the order amount adds one unit's price per
	// line, whatever its quantity.
	AmountIgnoresQuantity Bug = "amount-ignores-quantity"
	// CreatedOnRollback: when the order transaction's last write fails,
	// the service rolls back and still answers 201 with the order it had
	// prepared.
	CreatedOnRollback Bug = "created-on-rollback"

	// InboxAndEffectSeparateTx: the consumer commits the inbox row in a
	// transaction of its own, then writes the notification in a second.
	InboxAndEffectSeparateTx Bug = "inbox-and-effect-separate-tx"
	// EffectErrorSwallowed: the consumer records a failed effect
	// transaction and goes on: it commits the record's offset anyway.
	EffectErrorSwallowed Bug = "effect-error-swallowed"
	// BatchOutOfOrder: the consumer handles the records of a polled batch
	// last first.
	BatchOutOfOrder Bug = "batch-out-of-order"
	// DuplicateOffsetNotCommitted: the consumer does not commit the offset
	// of a record its inbox rejected as a duplicate.
	DuplicateOffsetNotCommitted Bug = "duplicate-offset-not-committed"
	// OffsetNotPlusOne: the consumer commits a record's own offset, not
	// the next one.
	OffsetNotPlusOne Bug = "offset-not-plus-one"
	// DedupeOnWrongKey: the consumer keys its inbox row by the record key
	// (the order id) instead of the event id.
	DedupeOnWrongKey Bug = "dedupe-on-wrong-key"

	// ProofFromConfig is planted into the runner, not the system under
	// test: it claims in the proof-boundary matrix what the scenarios were
	// configured to do (every declared fault fired) instead of what the
	// logs show, the overclaim the verifier's own derivation must catch.
	ProofFromConfig Bug = "proof-from-config"
)

// Parse returns the Bug named s ("" is None); spec.Plants lists the bugs.
func Parse(s string) (Bug, error) {
	b, err := spec.ParsePlant(s)
	return Bug(b), err
}
