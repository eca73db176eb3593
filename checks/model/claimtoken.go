package model

import (
	"fmt"
	"time"

	"github.com/orderflow-audit/orderflow-audit/spec"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The claim-token layer (spec.LayerClaimToken): what a relay that claims
// intents with a claim version, a claim id and a lease, and marks them SENT
// with a compare-and-set on that token, must obey. The token state is kept
// whatever the layers (the replayed outbox table holds claim_version and
// claim_id, and sendBeforeMarkCrash, relayKill9 and concurrentRelays
// derive their metrics from claims and marks); with this layer off only
// its rules go unreported.

// relayCounts are the counters of what relays did (Counts).
type relayCounts struct {
	refusedPublishes, unknownPublishes, marksAfterFailure int64
	takeovers, selfTakeovers, overlaps, leasesOffClaim    int64
	pastTimeout                                           int64
}

// claimRef is a claim id's latest claim: the row and the token it took.
type claimRef struct {
	row        *intent
	version    int64
	leaseUntil int64
}

// LeaseTolerance is how far a claim's lease may start from the claim's
// time (lease-off-claim): the claim's transaction, and the database clock
// against the actors' (one machine's clock for this tool's servers).
const LeaseTolerance = 5 * time.Second

// stepClaim: a relay claimed an intent, taking a new token and a lease.
func (m *Model) stepClaim(e *evidence.Event, src Source) {
	m.claims++
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	v := val(e.ClaimVersion)
	if v <= in.claimVersion && m.fillClaimGap(in, e, v, src) {
		return
	}
	gap := v > in.claimVersion+1 && e.StateBefore == evidence.StateClaimed
	if gap {
		m.openClaimGap(in, e, v, src)
	}
	if in.state == evidence.StateSent {
		m.violate(RuleClaimOnLiveLease, src, e.EventID, "claim v%d of %s, which is already SENT", v, e.EventID)
	} else if in.state == evidence.StateClaimed && !in.leaseExpired && in.leaseUntil > e.Time.UnixNano() {
		m.violate(RuleClaimOnLiveLease, src, e.EventID,
			"claim v%d of %s by %s at %s while v%d of %s holds a live lease until %s (not expired)",
			v, e.EventID, e.Actor, e.Time.Format(time.RFC3339Nano), in.claimVersion, in.claimActor,
			time.Unix(0, in.leaseUntil).UTC().Format(time.RFC3339Nano))
		if e.Actor != in.claimActor {
			m.doubleClaims++
		}
	}
	if v != in.claimVersion+1 && !gap {
		m.violate(RuleClaimVersionSkew, src, e.EventID, "claim of %s has claim_version %d, want %d (the row's + 1)",
			e.EventID, v, in.claimVersion+1)
	}
	if e.StateBefore != in.state && !gap {
		m.violate(RuleClaimStateMismatch, src, e.EventID, "claim of %s says state_before %s, the row was %s",
			e.EventID, e.StateBefore, in.state)
	}
	m.claimLease(in, e, src)
	in.state = evidence.StateClaimed
	in.claimVersion = v
	in.claimID = m.intern(e.ClaimID)
	in.claimActor = m.intern(e.Actor)
	in.leaseUntil = val(e.LeaseUntil).UnixNano()
	in.leaseExpired = false
	ts := in.addToken(v, in.claimID)
	ts.Claimed, ts.Holder = true, in.claimActor
	ts.claimedAt, ts.publishTimeout = e.Time.UnixNano(), val(e.PublishTimeoutMS)
	m.countOverlap(in, e)
}

// claimLease checks a claim's lease against its time (lease-off-claim)
// and, for a takeover, against the lease it replaces
// (takeover-old-lease), and counts the takeovers. in is the row before
// the claim.
func (m *Model) claimLease(in *intent, e *evidence.Event, src Source) {
	until := val(e.LeaseUntil)
	// The claim happened after its relay's last line before the claim's
	// transaction (its last line that is not a claim: the claims of one
	// transaction are all logged after its COMMIT) and before this one,
	// which may come late (the relay stopped after the COMMIT): its lease
	// is held to the earliest the claim can have been. Without such a
	// line the claim is held to its own line.
	earliest := e.Time
	if t, ok := m.lastLine[e.Actor]; ok {
		earliest = time.Unix(0, t).UTC()
	}
	when := "it"
	if !earliest.Equal(e.Time) {
		when = "the line before it of " + e.Actor + " (" + earliest.Format(time.RFC3339Nano) + ")"
	}
	switch {
	case !until.After(earliest):
		m.leasesOffClaim++
		m.violate(RuleLeaseOffClaim, src, e.EventID, "claim v%d of %s at %s has a lease that ended at %s, before %s",
			val(e.ClaimVersion), e.EventID, e.Time.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano), when)
	case e.LeaseMS != nil:
		start := until.Add(-time.Duration(*e.LeaseMS) * time.Millisecond)
		var off time.Duration // how far the lease starts outside [earliest, its line]
		if d := start.Sub(e.Time); d > LeaseTolerance {
			off = d
		} else if d := start.Sub(earliest); d < -LeaseTolerance {
			off = d
		}
		if off != 0 {
			m.leasesOffClaim++
			m.violate(RuleLeaseOffClaim, src, e.EventID,
				"claim v%d of %s at %s has lease_until %s: a lease of %d ms starting %s from the claim, not on the clock of the claim",
				val(e.ClaimVersion), e.EventID, e.Time.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano), *e.LeaseMS, off)
		}
	}
	if in.state != evidence.StateClaimed {
		return
	}
	m.takeovers++
	if e.ClaimID == in.claimID {
		m.selfTakeovers++
	}
	if until.UnixNano() <= in.leaseUntil {
		m.violate(RuleTakeoverOldLease, src, e.EventID,
			"takeover v%d of %s has lease_until %s, not after the lease %s of the claim v%d it replaces",
			val(e.ClaimVersion), e.EventID, until.Format(time.RFC3339Nano),
			time.Unix(0, in.leaseUntil).UTC().Format(time.RFC3339Nano), in.claimVersion)
	}
}

// countOverlap counts a claim made while another claim id held a live
// claim: its latest claim still the row's current token, the row still
// CLAIMED, its lease not over at this claim's time (Counts.Overlaps).
// in is the row after the claim.
func (m *Model) countOverlap(in *intent, e *evidence.Event) {
	now := e.Time.UnixNano()
	overlapped := false
	for id, ref := range m.lastClaim {
		r := ref.row
		if id != in.claimID && r.state == evidence.StateClaimed && r.claimID == id && r.claimVersion == ref.version &&
			!r.leaseExpired && ref.leaseUntil > now {
			overlapped = true
			break
		}
	}
	if overlapped {
		m.overlaps++
	}
	if _, ok := m.lastClaim[in.claimID]; ok || len(m.lastClaim) < maxClaimIDs {
		m.lastClaim[in.claimID] = claimRef{row: in, version: in.claimVersion, leaseUntil: in.leaseUntil}
	}
}

// stepLeaseExpired: the scenario aged a claim's lease by SQL; with
// rows>=1 the row may be claimed again before lease_until.
func (m *Model) stepLeaseExpired(e *evidence.Event, src Source) {
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	rows := val(e.Rows)
	m.oneRow(e, rows, src)
	if rows < 1 {
		return
	}
	if in.state != evidence.StateClaimed {
		m.violate(RuleLeaseExpiredNotClaimed, src, e.EventID,
			"lease of %s expired by SQL (rows=%d) while the row is %s, not CLAIMED", e.EventID, rows, in.state)
	} else if val(e.ClaimVersion) != in.claimVersion || e.ClaimID != in.claimID {
		m.violate(RuleLeaseExpiredMismatch, src, e.EventID,
			"lease_expired names claim v%d/%s of %s, but the lease it aged belongs to v%d/%s",
			val(e.ClaimVersion), e.ClaimID, e.EventID, in.claimVersion, in.claimID)
	}
	in.leaseExpired = true
}

// publishInTime: a claim's first publish outcome (acknowledged, refused
// or unknown) comes within the publish timeout its claim logged plus
// spec.PublishRoundSlack, plus the time nemesis faults overlapped the
// round (publish-past-timeout): the relay publishes its batch at once
// under one timeout, whatever the batch's size. A claim that logged no
// timeout is not judged.
func (m *Model) publishInTime(ts *Token, e *evidence.Event, src Source) {
	if ts.timed || !ts.Claimed || ts.publishTimeout <= 0 {
		return
	}
	ts.timed = true
	d := time.Duration(e.Time.UnixNano() - ts.claimedAt)
	bound, why := PublishBound(time.Duration(ts.publishTimeout)*time.Millisecond, m.faultOverlap(ts.claimedAt, e.Time.UnixNano()))
	if d <= bound {
		return
	}
	m.pastTimeout++
	m.violate(RulePublishPastTimeout, src, e.EventID,
		"the %s of %s (claim v%d/%s) came %v after its claim: its relay's publish timeout is %d ms, the bound %v%s",
		e.Kind, e.EventID, ts.Version, ts.ID, d, ts.publishTimeout, bound, why)
}

// PublishBound is how long after its claim a publish outcome may come
// (publish-past-timeout): the claim's publish timeout plus
// spec.PublishRoundSlack, plus held (the time nemesis faults overlapped
// the round); why says the faults in words ("" without).
func PublishBound(timeout, held time.Duration) (bound time.Duration, why string) {
	bound = timeout + spec.PublishRoundSlack
	if held > 0 {
		return bound + held, fmt.Sprintf(" (with %v that nemesis faults overlapped the round)", held)
	}
	return bound, ""
}

// faultOverlap is the time the nemesis's fault windows overlapped
// [start, end] (ns), added up; a window not healed yet lasts to end.
func (m *Model) faultOverlap(start, end int64) time.Duration {
	var held time.Duration
	for _, w := range m.windows {
		wEnd := w.end
		if wEnd == 0 || wEnd > end {
			wEnd = end
		}
		if o := wEnd - max(w.start, start); o > 0 {
			held += time.Duration(o)
		}
	}
	return held
}

// publishToken: a publish carries a token that claimed the row
// (publish-without-claim). It returns the token's state, nil when the row
// never saw that token.
func (m *Model) publishToken(in *intent, e *evidence.Event, src Source) *Token {
	ts := in.token(val(e.ClaimVersion), e.ClaimID)
	if ts == nil || !ts.Claimed {
		m.violate(RulePublishWithoutClaim, src, e.EventID,
			"publish of %s with token v%d/%s, which never claimed it", e.EventID, val(e.ClaimVersion), e.ClaimID)
	}
	return ts
}

// markToken: a mark that hit rows did so with the row's current claim
// (stale-token-mark): the compare-and-set on the token.
func (m *Model) markToken(in *intent, e *evidence.Event, rows int64, src Source) {
	if val(e.ClaimVersion) != in.claimVersion || e.ClaimID != in.claimID {
		m.violate(RuleStaleTokenMark, src, e.EventID,
			"mark of %s with token v%d/%s hit %d row(s), but the current claim is v%d/%s",
			e.EventID, val(e.ClaimVersion), e.ClaimID, rows, in.claimVersion, in.claimID)
	}
}

// faultToken: a fault that says its actor held a claim token names one
// that claimed its event id (the claim-token part of fault-mismatch, a
// rule of the delivery layer: checked only with this layer on).
func (m *Model) faultToken(e *evidence.Event, src Source) {
	if !m.tokenLayer {
		return
	}
	var ts *Token
	if in := m.intentOf(e.EventID); in != nil {
		ts = in.token(*e.ClaimVersion, e.ClaimID)
	}
	if ts == nil || !ts.Claimed {
		m.violate(RuleFaultMismatch, src, e.EventID,
			"the fault at %s says its actor held claim v%d/%s of %s, which never claimed it", e.Point, *e.ClaimVersion, e.ClaimID, e.EventID)
	}
}
