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
)

// Parse returns the Bug named s ("" is None); spec.Plants lists the bugs.
func Parse(s string) (Bug, error) {
	b, err := spec.ParsePlant(s)
	return Bug(b), err
}
