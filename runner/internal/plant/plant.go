// Package plant names the bugs that can be planted into the system under
// test, one per switch. They exist only as negative controls: tests and
// `run --plant <bug>` use them to prove that the scenarios and the verifier
// catch what they claim to catch. A planted run is labelled in the evidence.
package plant

import (
	"fmt"
	"strings"
)

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

// All lists the planted bugs with a one-line description, in order.
var All = []struct {
	Bug         Bug
	Description string
}{
	{MarkBeforePublish, "relay marks SENT before publishing"},
	{MarkWithoutToken, "relay marks SENT without checking the claim token"},
	{OffsetBeforeEffect, "consumer commits the offset before the effect transaction"},
	{NoInboxDedupe, "consumer writes the effect without the inbox dedupe"},
	{OutboxOutsideTx, "order service writes the outbox intent outside the order transaction"},
	{ClaimWithoutLock, "relay claims without SKIP LOCKED and without the lease check"},
}

// Parse returns the Bug named s ("" is None).
func Parse(s string) (Bug, error) {
	if s == "" {
		return None, nil
	}
	var names []string
	for _, b := range All {
		if string(b.Bug) == s {
			return b.Bug, nil
		}
		names = append(names, string(b.Bug))
	}
	return None, fmt.Errorf("unknown planted bug %q (valid: %s)", s, strings.Join(names, ", "))
}
