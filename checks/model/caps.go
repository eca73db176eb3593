package model

import "strings"

// Caps against hostile input: a log of a million events with ever new
// names, faults, observations or violations must not grow the model's
// memory without bound. What is over a cap is dropped (or, for
// violations, counted); the rules still see every event.
const (
	// maxViolationsPerRule bounds the violations kept of one rule; the
	// rest are counted (Violations).
	maxViolationsPerRule = 50
	// maxInterned bounds the interning table (intern).
	maxInterned = 4096
	// maxRequests bounds the answers of the order service kept in order
	// (Requests); all are counted.
	maxRequests = 4
	// maxGroups is how many consumer groups a record remembers having
	// received it: the bits of record.groups. A group beyond it never
	// counts as having received a record, so its offset commits are
	// reported offset-not-received.
	maxGroups = 64
	// maxObservations bounds, per event id, the observations kept for
	// Finish and the distinct observed states kept for ObservedStates.
	maxObservations = 64
	// maxFaults bounds the fault points kept (Faults).
	maxFaults = 64
	// maxRolledBack bounds the event ids of rolled-back order
	// transactions kept (RolledBack).
	maxRolledBack = 64
	// maxInvariants bounds the distinct invariant ids kept (Invariants).
	maxInvariants = 256
	// maxDecrements bounds, per SKU, the stock decrements kept for the
	// stock-mismatch check.
	maxDecrements = 1 << 20
	// maxClaimIDs bounds the claim ids whose latest claim is kept for
	// counting overlaps (Counts.Overlaps); a claim id beyond it is not
	// seen holding a claim.
	maxClaimIDs = 64
	// maxClientRequests bounds the client's requests (order_request)
	// kept for the end-of-scenario business checks (ClientRequests);
	// all are counted.
	maxClientRequests = 1 << 12
	// maxRolledBackOrders bounds the order ids of rolled-back order
	// transactions kept for created-on-rollback.
	maxRolledBackOrders = 1 << 12
	// maxOrderLines bounds the lines of one order the model keeps (an
	// order_committed may carry 64).
	maxOrderLines = 64
)

// intern returns one shared copy of a short, repeated string (topic,
// consumer, claim id, actor, sku): a copy that owns its bytes, never a
// slice of a decoded batch.
func (m *Model) intern(s string) string {
	if v, ok := m.strs[s]; ok {
		return v
	}
	v := strings.Clone(s)
	if len(m.strs) < maxInterned {
		m.strs[v] = v
	}
	return v
}
