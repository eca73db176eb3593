package spec

import (
	"github.com/orderflow-audit/orderflow-audit/internal/didyoumean"

	"fmt"
	"slices"
	"strings"
)

// Plant is a bug that `run --plant` can put into the system under test as a
// negative control (docs/negative-controls.md), with the scenarios that
// expose it and the verifier rules that must catch it there.
type Plant struct {
	Bug         string
	Description string
	Exposures   []Exposure
}

// InRunner tells whether the bug is planted into the runner's record of
// the run, not into the system under test: its exposing scenario passes,
// and the verifier alone catches the evidence.
func (p Plant) InRunner() bool { return p.Bug == "proof-from-config" }

// Exposure: running Scenario with the bug planted makes it fail, and the
// verifier names at least one of Rules.
type Exposure struct {
	Scenario string
	Rules    []string
}

// Scenarios returns the exposing scenarios, in table order.
func (p Plant) Scenarios() []string {
	var out []string
	for _, x := range p.Exposures {
		if !slices.Contains(out, x.Scenario) {
			out = append(out, x.Scenario)
		}
	}
	return out
}

// Rules returns every rule that catches the bug, in table order.
func (p Plant) Rules() []string {
	var out []string
	for _, x := range p.Exposures {
		for _, r := range x.Rules {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// Plants is the table of planted bugs.
var Plants = []Plant{
	{"mark-before-publish", "relay marks SENT before publishing",
		[]Exposure{{"sendBeforeMarkCrash", []string{"sent-without-publish"}}}},
	{"mark-without-token", "relay marks SENT without checking the claim token",
		[]Exposure{{"sendBeforeMarkCrash", []string{"stale-token-mark"}}}},
	{"offset-before-effect", "consumer commits the offset before the effect transaction",
		[]Exposure{{"offsetReplay", []string{"offset-before-effect"}}}},
	{"no-inbox-dedupe", "consumer writes the effect without the inbox dedupe",
		[]Exposure{{"normalChain", []string{"duplicate-effect"}}, {"offsetReplay", []string{"effect-without-inbox"}}}},
	{"outbox-outside-tx", "order service writes the outbox intent outside the order transaction",
		[]Exposure{{"orderCrashWindow", []string{"intent-outside-order-tx"}}}},
	{"claim-without-lock", "relay claims without SKIP LOCKED and without the lease check",
		[]Exposure{{"concurrentRelays", []string{"claim-on-live-lease"}}}},
	{"mark-cas-claim-id-only", "relay's mark compares the claim_id but not the claim_version",
		[]Exposure{{"selfTakeover", []string{"stale-token-mark"}}, {"batchSelfTakeover", []string{"stale-token-mark"}}}},
	{"lease-on-relay-clock", "relay writes and compares leases on its own clock, not the database's",
		[]Exposure{{"relayClockSkew", []string{"lease-off-claim", "witness-lease-clock"}}}},
	{"takeover-keeps-lease", "a takeover keeps the row's old lease instead of a fresh one",
		[]Exposure{{"selfTakeover", []string{"takeover-old-lease"}}}},
	{"claim-ignores-lease", "relay claims CLAIMED rows whatever their lease (SKIP LOCKED kept)",
		[]Exposure{{"concurrentRelays", []string{"claim-on-live-lease"}}, {"selfTakeover", []string{"claim-on-live-lease"}}}},
	{"mark-after-failed-publish", "relay marks SENT after a refused or unknown publish",
		[]Exposure{{"publishFailures", []string{"mark-after-failed-publish"}}}},
	{"publish-ahead-of-version", "relay claims and publishes an intent while an earlier version of its aggregate is unsent",
		[]Exposure{{"versionsAfterRefusal", []string{"receive-out-of-version"}}}},
	{"retry-new-event-id", "relay publishes a retry under a new event id",
		[]Exposure{{"publishFailures", []string{"publish-event-id-mismatch"}}}},
	{"publish-without-key", "relay publishes records without a key",
		[]Exposure{{"normalChain", []string{"publish-key-mismatch"}}}},
	{"inbox-and-effect-separate-tx", "consumer commits the inbox row and the notification in two transactions",
		[]Exposure{{"effectDbError", []string{"effect-outside-inbox-tx", "reject-without-inbox"}}}},
	{"effect-error-swallowed", "consumer swallows a failed effect transaction and commits the offset anyway",
		[]Exposure{{"effectDbError", []string{"offset-before-effect"}}}},
	{"batch-out-of-order", "consumer handles the records of a polled batch last first",
		[]Exposure{{"orderLifecycle", []string{"receive-out-of-order"}}}},
	{"batch-offset-before-effect", "batched consumer commits a poll's offsets before the poll's effect transaction",
		[]Exposure{{"replayCrash-batch", []string{"offset-before-effect"}}}},
	{"duplicate-offset-not-committed", "consumer does not commit the offset of a duplicate its inbox rejected",
		[]Exposure{{"consumerRestart", []string{"settled-not-committed"}}}},
	{"offset-not-plus-one", "consumer commits a record's own offset instead of the next one",
		[]Exposure{{"consumerRestart", []string{"offset-off-by-one"}}}},
	{"close-without-leave", "consumer joins as a static member (an instance id) and so closes without leaving its group: its partitions wait for the session timeout",
		[]Exposure{{"rebalanceSettling", []string{"partition-unowned-too-long"}}}},
	{"dedupe-on-wrong-key", "consumer keys its inbox by the record key (the order id) instead of the event id",
		[]Exposure{{"orderLifecycle", []string{"dedupe-wrong-key"}}}},
	{"inbox-by-event-id", "consumer looks its inbox up by event id alone, not by consumer and event id: another consumer's row of the event is taken for its own",
		[]Exposure{{"twoConsumers", []string{"reject-without-inbox"}}}},
	{"idem-key-across-users", "order service looks an idempotency record up by its key alone, not by user and key",
		[]Exposure{{"twoUsersOneKey", []string{"cross-principal-answer"}}}},
	{"token-alg-none", "order service accepts unsigned tokens (alg none)",
		[]Exposure{{"tokenClaims", []string{"bad-token-accepted"}}}},
	{"token-no-exp", "order service accepts tokens without exp",
		[]Exposure{{"tokenClaims", []string{"bad-token-accepted"}}}},
	{"token-nbf-ignored", "order service checks exp by hand with the library's claim checks off: nbf (and iss, aud) go unchecked",
		[]Exposure{{"tokenClaims", []string{"bad-token-accepted"}}}},
	{"token-iss-unchecked", "order service does not check the token's issuer",
		[]Exposure{{"tokenClaims", []string{"bad-token-accepted"}}}},
	{"token-aud-unchecked", "order service does not check the token's audience",
		[]Exposure{{"tokenClaims", []string{"bad-token-accepted"}}}},
	{"amount-ignores-quantity", "order amount adds one unit's price per line, whatever the quantity",
		[]Exposure{{"orderAmounts", []string{"amount-mismatch"}}}},
	{"created-on-rollback", "order service answers 201 with the prepared order after its transaction rolled back",
		[]Exposure{{"txBoundaryRollback", []string{"created-on-rollback"}}}},
	{"proof-from-config", "the runner claims in the proof boundary what the scenarios were configured to do, not what ran",
		[]Exposure{{"orderCrashWindow", []string{"proof-mismatch"}}}},
}

// LookupPlant returns the planted bug named bug.
func LookupPlant(bug string) (Plant, bool) {
	for _, p := range Plants {
		if p.Bug == bug {
			return p, true
		}
	}
	return Plant{}, false
}

// ParsePlant checks the name of a planted bug ("" is a clean run).
func ParsePlant(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if _, ok := LookupPlant(s); ok {
		return s, nil
	}
	names := make([]string, len(Plants))
	for i, p := range Plants {
		names[i] = p.Bug
	}
	return "", fmt.Errorf("unknown planted bug %q%s (valid: %s)", s, didyoumean.Hint(s, names), strings.Join(names, ", "))
}
