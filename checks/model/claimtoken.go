package model

import (
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The claim-token layer (spec.LayerClaimToken): what a relay that claims
// intents with a claim version, a claim id and a lease, and marks them SENT
// with a compare-and-set on that token, must obey. The token state is kept
// whatever the layers (the replayed outbox table holds claim_version and
// claim_id, and sendBeforeMarkCrash, relayKill9 and concurrentRelays
// derive their metrics from claims and marks); with this layer off only
// its rules go unreported.

// stepClaim: a relay claimed an intent, taking a new token and a lease.
func (m *Model) stepClaim(e *evidence.Event, src Source) {
	m.claims++
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	v := val(e.ClaimVersion)
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
	if v != in.claimVersion+1 {
		m.violate(RuleClaimVersionSkew, src, e.EventID, "claim of %s has claim_version %d, want %d (the row's + 1)",
			e.EventID, v, in.claimVersion+1)
	}
	if e.StateBefore != in.state {
		m.violate(RuleClaimStateMismatch, src, e.EventID, "claim of %s says state_before %s, the row was %s",
			e.EventID, e.StateBefore, in.state)
	}
	in.state = evidence.StateClaimed
	in.claimVersion = v
	in.claimID = m.intern(e.ClaimID)
	in.claimActor = m.intern(e.Actor)
	in.leaseUntil = val(e.LeaseUntil).UnixNano()
	in.leaseExpired = false
	in.addToken(v, in.claimID).Claimed = true
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
