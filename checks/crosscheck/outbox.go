package crosscheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// The relay's compare-and-sets as the binlog shows them: each claim, mark
// and lease expiry the logs record is an outbox row change with the same
// token before and after (state, claim_version, claim_id, lease_until); one
// that changed no row has none.

// outboxUpdate matches an update of event's outbox row whose before image
// has state from (any when "") and whose after image has state to and the
// token (v, id).
func outboxUpdate(event, from, to string, v int64, id string) func(*binlog.RowChange) bool {
	return func(c *binlog.RowChange) bool {
		return is(c, "outbox", binlog.Update) && eqStr(c.Before["event_id"], event) &&
			(from == "" || eqStr(c.Before["state"], from)) && eqStr(c.After["state"], to) &&
			eqInt(c.After["claim_version"], v) && eqStr(c.After["claim_id"], id)
	}
}

// claims: each claim is one outbox update from state_before to CLAIMED
// under a new claim version with the logged token and lease, in a
// transaction of claims only.
func (s *scenarioCheck) claims() {
	claimTx := map[*binlog.Transaction]string{}
	batch := map[*binlog.Transaction]int64{} // the smallest batch its claims logged
	var order []*binlog.Transaction
	for _, w := range s.kinds(evidence.KindClaim) {
		e := w.e
		v := i64(e.ClaimVersion)
		found := s.db.find(func(c *binlog.RowChange) bool {
			return outboxUpdate(e.EventID, "", evidence.StateClaimed, v, e.ClaimID)(c) && !eqInt(c.Before["claim_version"], v)
		})
		if len(found) == 0 {
			s.add(w.reason("witness-claim", "", "the log says %s was claimed (%s), but no outbox row change of the binlog made "+
				"that claim: a claim the database did not apply", e.EventID, tokenText(v, e.ClaimID)))
			continue
		}
		ch := found[0]
		s.db.use(ch)
		if _, ok := claimTx[ch.tx]; !ok {
			order = append(order, ch.tx)
		}
		claimTx[ch.tx] = e.ClaimID
		if e.Batch != nil && (batch[ch.tx] == 0 || *e.Batch < batch[ch.tx]) {
			batch[ch.tx] = *e.Batch
		}
		var problems []string
		if !eqStr(ch.c.Before["state"], e.StateBefore) {
			problems = append(problems, fmt.Sprintf("the row was %s before, the log says %s", show(ch.c.Before["state"]), e.StateBefore))
		}
		if !sameInstant(e.LeaseUntil, ch.c.After["lease_until"]) {
			problems = append(problems, fmt.Sprintf("lease_until became %s, the log says %s", show(ch.c.After["lease_until"]), showTime(e.LeaseUntil)))
		}
		if p := onlyChanged(ch.c, "state", "claim_version", "claim_id", "lease_until", "changed_at"); p != "" {
			problems = append(problems, p)
		}
		if len(problems) > 0 {
			s.add(w.reason("witness-claim", txWhere(*ch.tx), "the claim of %s (%s) is not the row change the binlog shows: %s",
				e.EventID, tokenText(v, e.ClaimID), strings.Join(problems, "; ")))
			continue
		}
		if p := leaseOffClock(ch.c, e.LeaseMS); p != "" {
			s.add(w.reason("witness-lease-clock", txWhere(*ch.tx), "the claim of %s (%s) %s: a lease is NOW(6) plus the lease "+
				"in the claim's own statement, on the database clock", e.EventID, tokenText(v, e.ClaimID), p))
			continue
		}
		s.sum.claims++
	}
	for _, tx := range order {
		id := claimTx[tx]
		if n := claimsIn(s.db.byTx[tx], id); batch[tx] > 0 && int64(n) > batch[tx] {
			s.add(finding.Reason{Rule: "witness-claim-batch", Status: finding.Fail, Witness: txWhere(*tx),
				Message: fmt.Sprintf("a claim transaction took %d rows; its relay's round may take at most %d (the batch its claims logged)", n, batch[tx])})
		}
		for _, ch := range s.db.byTx[tx] {
			if !claimLike(ch.c, id) {
				s.db.use(ch)
				s.add(finding.Reason{Rule: "witness-claim", Status: finding.Fail, Witness: txWhere(*tx),
					Message: fmt.Sprintf("a claim's transaction also wrote %s: a claim transaction holds the claims of one relay and nothing else", describe(ch.c))})
			}
		}
	}
}

// leaseOffClock: the outbox's changed_at is the database clock at the
// claim's statement (the server sets it on every update), so a lease on
// the database clock ends exactly leaseMS after it. It says how the
// after image differs, or "" when it does not or the row has no
// changed_at (a schema without it: nothing to hold the lease to).
func leaseOffClock(c *binlog.RowChange, leaseMS *int64) string {
	at, ok := c.After["changed_at"].(time.Time)
	if !ok || leaseMS == nil {
		return ""
	}
	until, _ := c.After["lease_until"].(time.Time)
	want := at.Add(time.Duration(*leaseMS) * time.Millisecond)
	if until.Equal(want) {
		return ""
	}
	return fmt.Sprintf("wrote lease_until %s at %s (the server's changed_at), %s off the lease of %d ms it logged",
		show(c.After["lease_until"]), show(c.After["changed_at"]), until.Sub(want), *leaseMS)
}

// claimsIn counts the claims of claim id in a transaction's changes.
func claimsIn(chs []*change, id string) int {
	n := 0
	for _, ch := range chs {
		if claimLike(ch.c, id) {
			n++
		}
	}
	return n
}

// claimLike tells whether c claims an outbox row for claim id id.
func claimLike(c *binlog.RowChange, id string) bool {
	return is(c, "outbox", binlog.Update) && eqStr(c.After["state"], evidence.StateClaimed) && eqStr(c.After["claim_id"], id) &&
		!eqInt(c.Before["claim_version"], mustInt(c.After["claim_version"]))
}

func mustInt(v any) int64 { n, _ := vInt(v); return n }

func showTime(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().Format("2006-01-02T15:04:05.999999Z")
}

// marks: a mark of 1 row is the outbox update CLAIMED -> SENT of its row
// under the logged token; a mark of 0 rows has no such change. A relay
// may mark a batch in one statement: a mark's transaction holds marks
// (CLAIMED -> SENT changes) and nothing else.
func (s *scenarioCheck) marks() {
	var markTxs []*binlog.Transaction
	for _, w := range s.kinds(evidence.KindMark) {
		e := w.e
		v := i64(e.ClaimVersion)
		found := s.db.find(func(c *binlog.RowChange) bool {
			return outboxUpdate(e.EventID, evidence.StateClaimed, evidence.StateSent, v, e.ClaimID)(c) &&
				eqInt(c.Before["claim_version"], v) && eqStr(c.Before["claim_id"], e.ClaimID)
		})
		switch rows := i64(e.Rows); {
		case rows == 0 && len(found) > 0:
			s.db.use(found[0])
			s.add(w.reason("witness-mark", txWhere(*found[0].tx), "the log says the mark of %s (%s) changed 0 rows, but the binlog "+
				"has it setting the row SENT", e.EventID, tokenText(v, e.ClaimID)))
		case rows == 0:
			s.sum.zeroMarks++
		case len(found) == 0:
			s.add(w.reason("witness-mark", "", "the log says the mark of %s (%s) changed %d row(s), but the binlog has no "+
				"CLAIMED -> SENT change of that row under that token: a compare-and-set the database did not apply", e.EventID, tokenText(v, e.ClaimID), rows))
		default:
			ch := found[0]
			s.db.use(ch)
			if !slices.Contains(markTxs, ch.tx) {
				markTxs = append(markTxs, ch.tx)
			}
			if p := onlyChanged(ch.c, "state", "sent_at", "changed_at"); p != "" || rows != 1 {
				s.add(w.reason("witness-mark", txWhere(*ch.tx), "the mark of %s (%s, %d row(s) logged) is not one CAS of one row: %s",
					e.EventID, tokenText(v, e.ClaimID), rows, orDefault(p, "one row changed")))
				continue
			}
			s.sum.marks++
		}
	}
	for _, tx := range markTxs {
		for _, ch := range s.db.byTx[tx] {
			if !markLike(ch.c) {
				s.db.use(ch)
				s.add(finding.Reason{Rule: "witness-mark", Status: finding.Fail, Witness: txWhere(*tx),
					Message: fmt.Sprintf("a mark's transaction also wrote %s: a mark transaction holds marks and nothing else", describe(ch.c))})
			}
		}
	}
}

// markLike tells whether c sets an outbox row CLAIMED -> SENT under an
// unchanged token.
func markLike(c *binlog.RowChange) bool {
	return is(c, "outbox", binlog.Update) && eqStr(c.Before["state"], evidence.StateClaimed) && eqStr(c.After["state"], evidence.StateSent) &&
		show(c.Before["claim_version"]) == show(c.After["claim_version"]) && show(c.Before["claim_id"]) == show(c.After["claim_id"])
}

// leases: a lease expiry of 1 row moves lease_until back under an
// unchanged token; one of 0 rows has no such change.
func (s *scenarioCheck) leases() {
	for _, w := range s.kinds(evidence.KindLeaseExpired) {
		e := w.e
		v := i64(e.ClaimVersion)
		found := s.db.find(func(c *binlog.RowChange) bool {
			return outboxUpdate(e.EventID, evidence.StateClaimed, evidence.StateClaimed, v, e.ClaimID)(c) &&
				eqInt(c.Before["claim_version"], v) && eqStr(c.Before["claim_id"], e.ClaimID)
		})
		rows := i64(e.Rows)
		switch {
		case rows == 0 && len(found) == 0:
			continue
		case rows == 0:
			s.db.use(found[0])
			s.add(w.reason("witness-lease-expired", txWhere(*found[0].tx), "the log says expiring the lease of %s (%s) changed 0 rows, "+
				"but the binlog has the change", e.EventID, tokenText(v, e.ClaimID)))
			continue
		case len(found) == 0:
			s.add(w.reason("witness-lease-expired", "", "the log says the lease of %s (%s) was expired, but no outbox row change "+
				"of the binlog did it", e.EventID, tokenText(v, e.ClaimID)))
			continue
		}
		ch := found[0]
		s.db.use(ch)
		before, _ := ch.c.Before["lease_until"].(time.Time)
		after, _ := ch.c.After["lease_until"].(time.Time)
		if p := onlyChanged(ch.c, "lease_until", "changed_at"); p != "" || !after.Before(before) {
			s.add(w.reason("witness-lease-expired", txWhere(*ch.tx), "expiring the lease of %s (%s) did not move lease_until back "+
				"(%s -> %s) %s", e.EventID, tokenText(v, e.ClaimID), show(ch.c.Before["lease_until"]), show(ch.c.After["lease_until"]), p))
			continue
		}
		s.sum.leases++
	}
}

// orDefault returns s, or d when s is empty.
func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
