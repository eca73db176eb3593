package crosscheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// The ack boundary as the binlog shows it: each effect is one transaction
// of the inbox row and the notification together; a rejected duplicate
// wrote nothing.

// effectPair is an effect with the inbox_insert its consumer logged for it
// (nil when none was).
type effectPair struct {
	effect Event
	inbox  *Event
}

// pairEffects pairs each effect with the inbox_insert of the same actor
// and event id logged before it; inbox inserts left unpaired are returned
// apart.
func (s *scenarioCheck) pairEffects() ([]effectPair, []Event) {
	type k struct{ actor, event string }
	open := map[k][]Event{}
	var pairs []effectPair
	for _, w := range s.kinds(evidence.KindInboxInsert, evidence.KindEffect) {
		key := k{w.e.Actor, w.e.EventID}
		if w.e.Kind == evidence.KindInboxInsert {
			open[key] = append(open[key], w)
			continue
		}
		p := effectPair{effect: w}
		if q := open[key]; len(q) > 0 {
			p.inbox = &q[0]
			open[key] = q[1:]
		}
		pairs = append(pairs, p)
	}
	var left []Event
	for _, w := range s.kinds(evidence.KindInboxInsert) {
		if q := open[k{w.e.Actor, w.e.EventID}]; len(q) > 0 && q[0].src == w.src {
			left = append(left, w)
			open[k{w.e.Actor, w.e.EventID}] = q[1:]
		}
	}
	return pairs, left
}

// effects checks every effect's transaction. A transaction that holds
// the notifications of several effects of the log (the batched consumer
// settles a poll in one) is checked effect by effect over the rows each
// claims: its notification by id, its inbox row by what its inbox_insert
// says (effectsbatch.go); a row no effect of the transaction claims is a
// problem of the first.
func (s *scenarioCheck) effects() {
	pairs, left := s.pairEffects()
	var txs []*binlog.Transaction
	byTx := map[*binlog.Transaction][]effectPair{}
	for _, p := range pairs {
		e := p.effect.e
		nid := i64(e.NotificationID)
		found := s.db.find(func(c *binlog.RowChange) bool {
			return is(c, "notification", binlog.Insert) && eqInt(c.After["id"], nid)
		})
		if len(found) == 0 {
			s.add(p.effect.reason("witness-effect-tx", "", "the log says notification %d of %s was committed, but no transaction "+
				"of the binlog inserts it", nid, e.EventID))
			continue
		}
		tx := found[0].tx
		if _, seen := byTx[tx]; !seen {
			txs = append(txs, tx)
		}
		byTx[tx] = append(byTx[tx], p)
	}
	for _, tx := range txs {
		group := byTx[tx]
		chs := s.db.byTx[tx]
		s.db.use(chs...)
		own, extra := claimRows(group, chs)
		for i, p := range group {
			e := p.effect.e
			rows := chs
			if len(group) > 1 {
				rows = own[i]
			}
			problems := effectProblems(p, rows)
			if i == 0 && len(group) > 1 {
				for _, ch := range extra {
					problems = append(problems, "the transaction also writes "+describe(ch.c)+", which no effect of the log claims")
				}
			}
			inboxTx := tx
			if p.inbox != nil && !slices.ContainsFunc(rows, func(ch *change) bool { return is(ch.c, "inbox", binlog.Insert) }) {
				if apart := s.db.find(inboxRow(p.inbox.e)); len(apart) > 0 {
					s.db.use(apart[0])
					inboxTx = apart[0].tx
					problems = append(problems, "its inbox row is in another transaction, "+txWhere(*inboxTx))
				}
			}
			if t := sameTrx(e, tx); t != "" {
				problems = append(problems, t)
			}
			if p.inbox != nil {
				if t := sameTrx(p.inbox.e, inboxTx); t != "" {
					problems = append(problems, t)
				}
			}
			if len(problems) > 0 {
				s.add(p.effect.reason("witness-effect-tx", txWhere(*tx), "the effect of %s is not one transaction of its inbox row "+
					"and its notification: %s", e.EventID, strings.Join(problems, "; ")))
				continue
			}
			s.sum.effectTx++
		}
	}
	for _, w := range left {
		found := s.db.find(inboxRow(w.e))
		if len(found) == 0 {
			s.add(w.reason("witness-effect-tx", "", "the log says the inbox row of %s (%s) was committed, but no transaction "+
				"of the binlog inserts it", w.e.EventID, recordWhere(w.e.Topic, i32(w.e.Partition), i64(w.e.Offset))))
			continue
		}
		s.db.use(found[0])
		if t := sameTrx(w.e, found[0].tx); t != "" {
			s.add(w.reason("witness-effect-tx", txWhere(*found[0].tx), "the inbox row of %s: %s", w.e.EventID, t))
		}
	}
}

// unknownCommits resolves each effect transaction whose COMMIT got no
// answer: its inbox row and notification, which no effect event explains,
// are in the binlog (it committed) or they are not.
func (s *scenarioCheck) unknownCommits() {
	for _, w := range s.kinds(evidence.KindCommitUnknown) {
		e := w.e
		inbox := s.db.find(func(c *binlog.RowChange) bool {
			a := c.After
			return is(c, "inbox", binlog.Insert) && eqStr(a["consumer"], e.Consumer) && eqStr(a["topic"], e.Topic) &&
				eqInt(a["part"], int64(i32(e.Partition))) && eqInt(a["msg_offset"], i64(e.Offset))
		})
		if len(inbox) == 0 {
			s.sum.unknownCommits++
			continue
		}
		chs := s.db.byTx[inbox[0].tx]
		s.db.use(chs...)
		s.sum.unknownCommitted = append(s.sum.unknownCommitted, inbox[0].tx.GTID)
	}
}

// inboxRow matches the inbox insert an inbox_insert names: its consumer,
// the key it was written under (inbox_key, which a consumer logs when it
// says so; the event id otherwise), and the record.
func inboxRow(e evidence.Event) func(*binlog.RowChange) bool {
	key := e.InboxKey
	if key == "" {
		key = e.EventID
	}
	return func(c *binlog.RowChange) bool {
		a := c.After
		return is(c, "inbox", binlog.Insert) && eqStr(a["consumer"], e.Consumer) && eqStr(a["event_id"], key) &&
			eqStr(a["topic"], e.Topic) && eqInt(a["part"], int64(i32(e.Partition))) && eqInt(a["msg_offset"], i64(e.Offset))
	}
}

// sameTrx holds an event's trx_id (the GTID its consumer read back after
// the commit, @@last_gtid) against the transaction: "" when it says none.
func sameTrx(e evidence.Event, tx *binlog.Transaction) string {
	if e.TrxID == "" || e.TrxID == tx.GTID.String() {
		return ""
	}
	return fmt.Sprintf("the log says %s was committed by transaction %s, the binlog has it in %s", e.Kind, e.TrxID, tx.GTID)
}

// effectProblems compares an effect's transaction with the effect and
// its inbox_insert.
func effectProblems(p effectPair, chs []*change) []string {
	e := p.effect.e
	var problems []string
	inbox, notes := 0, 0
	for _, ch := range chs {
		c, a := ch.c, ch.c.After
		switch {
		case is(c, "notification", binlog.Insert):
			notes++
			if !eqStr(a["event_id"], e.EventID) || !eqInt(a["order_id"], i64(e.OrderID)) || !eqStr(a["consumer"], e.Consumer) {
				problems = append(problems, fmt.Sprintf("the notification is for %s, order %s, consumer %s; the log says %s, order %d, consumer %s",
					show(a["event_id"]), show(a["order_id"]), show(a["consumer"]), e.EventID, i64(e.OrderID), e.Consumer))
			}
		case is(c, "inbox", binlog.Insert):
			inbox++
			if p.inbox != nil && !inboxRow(p.inbox.e)(c) {
				problems = append(problems, fmt.Sprintf("the inbox row is %s/%s at %s/%s@%s; the log says %s/%s at %s", show(a["consumer"]),
					show(a["event_id"]), show(a["topic"]), show(a["part"]), show(a["msg_offset"]), p.inbox.e.Consumer, p.inbox.e.EventID,
					recordWhere(p.inbox.e.Topic, i32(p.inbox.e.Partition), i64(p.inbox.e.Offset))))
			}
		default:
			problems = append(problems, "it also writes "+describe(c))
		}
	}
	switch {
	case notes != 1:
		problems = append(problems, fmt.Sprintf("%d notifications", notes))
	case inbox == 0:
		problems = append(problems, "it holds no inbox row: the effect is not guarded by the inbox")
	case inbox > 1:
		problems = append(problems, fmt.Sprintf("%d inbox rows", inbox))
	case p.inbox == nil:
		problems = append(problems, "it holds an inbox row the log does not record")
	}
	return problems
}

// rejects: an inbox_reject, or an effect transaction the log says rolled
// back (effect_rolled_back), left nothing in the binlog: no inbox row or
// notification of that event beyond the effect's.
func (s *scenarioCheck) rejects() {
	for _, w := range s.kinds(evidence.KindInboxReject, evidence.KindEffectRolledBack) {
		e := w.e
		found := s.db.find(func(c *binlog.RowChange) bool {
			return (is(c, "inbox", binlog.Insert) || is(c, "notification", binlog.Insert)) &&
				eqStr(c.After["event_id"], e.EventID) && eqStr(c.After["consumer"], e.Consumer)
		})
		if len(found) == 0 && e.Kind == evidence.KindEffectRolledBack {
			s.sum.rolledBackEffects++
			continue
		}
		if len(found) == 0 {
			s.sum.rejects++
			continue
		}
		for _, ch := range found {
			s.db.use(s.db.byTx[ch.tx]...)
		}
		what := "the inbox rejected"
		if e.Kind == evidence.KindEffectRolledBack {
			what = "the effect transaction rolled back for"
		}
		s.add(w.reason("witness-reject-wrote", txWhere(*found[0].tx), "the log says %s %s at %s, but the binlog "+
			"has %s of that event that no effect explains: it was not rolled back", what, e.EventID,
			recordWhere(e.Topic, i32(e.Partition), i64(e.Offset)), txDescribe(found)))
	}
}
