package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Actors log an action when its outcome is known: after the COMMIT
// returned. Another actor may act on what that transaction wrote before
// the first one's line is written (its answer slowed by the network, its
// process descheduled), so the merged log can show a claim of an intent
// before the order_committed that created it, or an inbox_reject before
// the inbox_insert it conflicted with. Both orders are possible in a
// correct system; the database saw the creation first. The model keeps
// such an event and waits for the event that explains it until the end of
// the scenario, which then reports what is still unexplained, at the
// event that needed it (unknown-intent, reject-without-inbox).

// logOrder is the Model's part for events that wait for their cause.
type logOrder struct {
	// provisional: intents created by a claim that came before their
	// order_committed (or outbox_written, seed_outbox), by event id.
	provisional map[string]waiting
	// waitingRejects: inbox_reject events with no inbox row yet, by inbox
	// key.
	waitingRejects map[inboxKey][]waiting
	// claimGaps: takeovers logged before the claims they took over, by
	// event id.
	claimGaps map[string]*claimGap
}

// A relay logs its claim after the claim's COMMIT; stopped in between (a
// pause, a slow process) it writes the line after another relay's
// takeover of the same row, once the first lease ran out, and maybe after
// that relay's mark. The database numbered the claims (claim_version): a
// takeover whose claim_version skips versions the history has not shown
// yet, with state_before CLAIMED, waits for the missing claims' lines;
// each, when it comes, is checked where the database put it: its
// state_before is the row's before the gap, its lease had run out when
// the takeover came (claim-on-live-lease), the takeover's lease is later
// (takeover-old-lease). A gap still open at the end is the claim-version
// skew it looked like (claim-version-skew, claim-state-mismatch).

// claimGap is a takeover that skipped claim versions.
type claimGap struct {
	missing     []int64 // the claim versions not yet shown, ascending
	from, to    int64   // the first and the last version skipped
	stateBefore string  // the row's state before the first of them
	// the takeover that skipped them: its time, lease, claim id, actor
	at, leaseUntil int64
	claimID, actor string
	src            Source
	message        string
}

// openClaimGap: e, a claim of in with state_before CLAIMED, skipped the
// versions between the row's and v.
func (m *Model) openClaimGap(in *intent, e *evidence.Event, v int64, src Source) {
	g := &claimGap{from: in.claimVersion + 1, to: v - 1, stateBefore: in.state, at: e.Time.UnixNano(), leaseUntil: val(e.LeaseUntil).UnixNano(),
		claimID: m.intern(e.ClaimID), actor: m.intern(e.Actor), src: src,
		message: fmt.Sprintf("claim of %s has claim_version %d and state_before %s, but the history shows the row at claim_version %d, %s, "+
			"and no line of the claims between", e.EventID, v, e.StateBefore, in.claimVersion, in.state)}
	for w := in.claimVersion + 1; w < v; w++ {
		g.missing = append(g.missing, w)
	}
	if m.claimGaps == nil {
		m.claimGaps = map[string]*claimGap{}
	}
	m.claimGaps[in.id] = g
}

// fillClaimGap: e is a claim of version v at or below the row's; when v
// is a version a takeover skipped, it is that claim's late line: checked
// in its place and taken as a token of the row, which stays as it is. It
// tells whether it was.
func (m *Model) fillClaimGap(in *intent, e *evidence.Event, v int64, src Source) bool {
	g := m.claimGaps[in.id]
	if g == nil {
		return false
	}
	i := slices.Index(g.missing, v)
	if i < 0 {
		return false
	}
	g.missing = slices.Delete(g.missing, i, i+1)
	want := evidence.StateClaimed
	if v == g.from {
		want = g.stateBefore
	}
	if e.StateBefore != want {
		m.violate(RuleClaimStateMismatch, src, e.EventID, "claim v%d of %s (logged after its takeover) says state_before %s, the row was %s",
			v, e.EventID, e.StateBefore, want)
	}
	until := val(e.LeaseUntil)
	if until.UnixNano() > g.at {
		m.violate(RuleClaimOnLiveLease, g.src, e.EventID,
			"takeover of %s by %s at %s while v%d of %s (its line logged later) held a live lease until %s",
			e.EventID, g.actor, time.Unix(0, g.at).UTC().Format(time.RFC3339Nano), v, e.Actor, until.Format(time.RFC3339Nano))
		if g.actor != m.intern(e.Actor) {
			m.doubleClaims++
		}
	}
	if e.LeaseMS != nil {
		// The line came late: its lease may start long before it, never after.
		if d := until.Add(-time.Duration(*e.LeaseMS) * time.Millisecond).Sub(e.Time); d > LeaseTolerance {
			m.leasesOffClaim++
			m.violate(RuleLeaseOffClaim, src, e.EventID, "claim v%d of %s at %s has lease_until %s: a lease of %d ms starting %s after the line that logs it",
				v, e.EventID, e.Time.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano), *e.LeaseMS, d)
		}
	}
	if v == g.to {
		// the takeover took the row over from this claim
		m.takeovers++
		if g.claimID == m.intern(e.ClaimID) {
			m.selfTakeovers++
		}
		if g.leaseUntil <= until.UnixNano() {
			m.violate(RuleTakeoverOldLease, g.src, e.EventID, "takeover of %s has lease_until %s, not after the lease %s of the claim v%d it replaces",
				e.EventID, time.Unix(0, g.leaseUntil).UTC().Format(time.RFC3339Nano), until.Format(time.RFC3339Nano), v)
		}
	}
	if len(g.missing) == 0 {
		delete(m.claimGaps, in.id)
	}
	ts := in.insertToken(v, m.intern(e.ClaimID))
	ts.Claimed, ts.Holder = true, m.intern(e.Actor)
	return true
}

// waiting is an event that waits for its cause.
type waiting struct {
	src     Source
	message string
}

// provisionalIntent creates the outbox row a claim names before anything
// created it, to be confirmed by its creation (confirmIntent) before the
// end of the scenario.
func (m *Model) provisionalIntent(e *evidence.Event, src Source) *intent {
	if e.Kind != evidence.KindClaim || e.OrderID == nil {
		return nil
	}
	es := m.ev(e.EventID)
	es.hasRow = true
	es.aggregateID = *e.OrderID
	es.state = evidence.StatePending
	m.rows = append(m.rows, es)
	if m.provisional == nil {
		m.provisional = map[string]waiting{}
	}
	m.provisional[es.id] = waiting{src: src, message: string(e.Kind) + " of " + e.EventID +
		", an event id that no order_committed, seed_outbox or outbox_written created"}
	return es
}

// confirmIntent: the creation of an intent a claim made provisional; it
// returns the row (nil when eventID was not provisional).
func (m *Model) confirmIntent(eventID string, agg int64, src Source) *intent {
	if _, ok := m.provisional[eventID]; !ok {
		return nil
	}
	delete(m.provisional, eventID)
	es := m.byID[eventID]
	if agg != es.aggregateID {
		m.violate(RuleIntentMismatch, src, eventID, "the intent %s of aggregate %d was claimed before as aggregate %d",
			eventID, agg, es.aggregateID)
	}
	return es
}

// waitReject keeps an inbox_reject that has no inbox row yet.
func (m *Model) waitReject(k inboxKey, src Source, message string) {
	if m.waitingRejects == nil {
		m.waitingRejects = map[inboxKey][]waiting{}
	}
	m.waitingRejects[k] = append(m.waitingRejects[k], waiting{src: src, message: message})
}

// settleRejects: the inbox row of k was inserted; the rejects that came
// before its line are explained.
func (m *Model) settleRejects(k inboxKey) { delete(m.waitingRejects, k) }

// checkWaiting reports what is still unexplained at the end.
func (m *Model) checkWaiting(truncated bool) {
	for _, id := range bySource(m.provisional, func(w waiting) Source { return w.src }) {
		w := m.provisional[id]
		m.report(truncated, RuleUnknownIntent, w.src, id, "%s", w.message)
	}
	for _, id := range bySource(m.claimGaps, func(g *claimGap) Source { return g.src }) {
		g := m.claimGaps[id]
		m.report(truncated, RuleClaimVersionSkew, g.src, id, "%s", g.message)
	}
	for _, k := range bySource(m.waitingRejects, func(ws []waiting) Source { return ws[0].src }) {
		if m.inboxHas(k) {
			continue // an unknown commit of k turned out to have committed
		}
		for _, w := range m.waitingRejects[k] {
			m.report(truncated, RuleRejectWithoutInbox, w.src, k.eventID, "%s", w.message)
		}
	}
}

// bySource returns the keys of waits in the order of their sources (src),
// so that what is reported does not depend on map order.
func bySource[K comparable, V any](waits map[K]V, src func(V) Source) []K {
	keys := make([]K, 0, len(waits))
	for k := range waits {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return cmpSource(src(waits[a]), src(waits[b])) })
	return keys
}

// cmpSource orders sources by log, then line.
func cmpSource(a, b Source) int {
	if c := strings.Compare(a.Log, b.Log); c != 0 {
		return c
	}
	return cmp.Compare(a.Line, b.Line)
}
