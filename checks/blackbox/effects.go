package blackbox

import (
	"fmt"
	"sort"
	"strings"
)

// effects: a delivered event has, for each consumer, exactly the promised
// number of effect rows; every effect and inbox row is of a committed
// event; an effect commits with its inbox row.
func (c *checker) effects() {
	m := c.m
	p := m.prof
	if p.Effect == nil {
		return
	}
	c.apply(RuleEffects, RuleEffectOrphan)
	consumers := map[string]bool{}
	for e := range m.effects.each() {
		consumers[m.consumer(e)] = true
	}
	for in := range m.inbox.each() {
		consumers[m.consumer(in)] = true
	}
	if len(consumers) == 0 {
		consumers[""] = true // no consumer wrote anything: every delivered event lacks its effects
	}
	names := make([]string, 0, len(consumers))
	for k := range consumers {
		names = append(names, k)
	}
	sort.Strings(names)
	x := c.effectIndex()
	for ev := range m.events.each() {
		rec, ok := c.delivered(ev)
		if !ok {
			continue
		}
		for _, cons := range names {
			n, last := 0, 0
			for k := x.head[ev.idx]; k >= 0; k = x.next[k] {
				if e := m.effects.at(k); m.consumer(e) == cons {
					n, last = n+1, int(e.tx)
				}
			}
			if n == p.Effect.PerEvent {
				continue
			}
			who := ""
			if cons != "" {
				who = " by consumer " + cons
			}
			st, tx := Fail, ev.tx
			if n > 0 {
				tx = last
			}
			if n < p.Effect.PerEvent && (c.binlogHole || c.in.Unsettled) {
				st = Inconclusive
			}
			var at []string
			for k := x.head[ev.idx]; k >= 0; k = x.next[k] {
				if e := m.effects.at(k); m.consumer(e) == cons {
					at = append(at, c.at(int(e.tx)))
				}
			}
			c.add(m.reason(RuleEffects, st, ev.id, tx, rec, "event %s was delivered and has %d effect(s)%s in %s; %d promised%s",
				ev.id, n, who, p.Effect.Table, p.Effect.PerEvent, list(" (at ", at, ")")))
		}
	}
	c.orphans("effect", p.Effect.Table, &m.effects)
	if p.Inbox != nil {
		c.orphans("inbox", p.Inbox.Table, &m.inbox)
		c.outsideInbox()
	}
}

// effectIndex is the effect rows by the event they name (the events'
// index in model.events): head[i] is the first row of event i, next[k]
// the row after row k; -1 ends a list. A list is in commit order.
type effectIndex struct{ head, next []int }

// effectIndex indexes the effect rows once, for the rules that read them
// by event.
func (c *checker) effectIndex() *effectIndex {
	if c.byEvent != nil {
		return c.byEvent
	}
	m := c.m
	x := &effectIndex{head: make([]int, m.events.len()), next: make([]int, m.effects.len())}
	for i := range x.head {
		x.head[i] = -1
	}
	for k := m.effects.len() - 1; k >= 0; k-- {
		x.next[k] = -1
		if ev := m.eventOf(m.effects.at(k)); ev != nil {
			x.next[k], x.head[ev.idx] = x.head[ev.idx], k
		}
	}
	c.byEvent = x
	return x
}

// delivered reports whether an event reached a consumer: a record of it
// below the committed offset of a selected group (any record, when no
// group committed on the topic). It returns that record.
func (c *checker) delivered(ev *event) (int, bool) {
	m := c.m
	if c.groups == nil {
		c.groups = []string{}
		if c.in.Broker != nil {
			for g, topics := range c.in.Broker.Groups {
				if _, ok := topics[m.topic]; ok && m.groupMatch(g) {
					c.groups = append(c.groups, g)
				}
			}
		}
	}
	groups := c.groups
	for k := range m.recs(ev) {
		r := m.records[k]
		if len(groups) == 0 {
			return k, true
		}
		for _, g := range groups {
			if o, ok := c.in.Broker.Committed(g, m.topic, r.Partition); ok && o > r.Offset {
				return k, true
			}
		}
	}
	return -1, false
}

func (c *checker) orphans(kind, table string, rows *chunks[sideRow]) {
	m := c.m
	for _, r := range rows.all() {
		if r.hasEvent && (r.ev >= 0 || m.isID(m.idOf(r.ev))) {
			continue
		}
		st := Fail
		if c.binlogHole {
			st = Inconclusive
		}
		if !r.hasEvent {
			c.add(m.reason(RuleEffectOrphan, Fail, "", int(r.tx), -1, "an %s row in %s has no event id", kind, table))
			continue
		}
		id := m.idOf(r.ev)
		c.add(m.reason(RuleEffectOrphan, st, id, int(r.tx), -1, "an %s row in %s names event %s, which no transaction of the run window committed", kind, table, id))
	}
}

// outsideInbox: each effect's transaction also inserts the inbox row of
// its event (and consumer, when both tables name one).
func (c *checker) outsideInbox() {
	m := c.m
	c.apply(RuleEffectOutsideInbox)
	type key struct{ event, consumer string }
	withConsumer := m.prof.Inbox.Consumer != nil && m.prof.Effect.Consumer != nil
	// Rows are filed in commit order: the inbox rows of each effect's
	// transaction are gathered as the effects reach it, one transaction's
	// at a time.
	inboxAt := map[key]bool{}
	tx, next := -1, 0
	for e := range m.effects.each() {
		if int(e.tx) != tx {
			tx = int(e.tx)
			clear(inboxAt)
			for ; next < m.inbox.len() && int(m.inbox.at(next).tx) <= tx; next++ {
				if in := m.inbox.at(next); int(in.tx) == tx {
					k := key{event: m.idOf(in.ev)}
					if withConsumer {
						k.consumer = m.consumer(in)
					}
					inboxAt[k] = true
				}
			}
		}
		k := key{event: m.idOf(e.ev)}
		if withConsumer {
			k.consumer = m.consumer(e)
		}
		if !inboxAt[k] {
			c.add(m.reason(RuleEffectOutsideInbox, Fail, k.event, int(e.tx), -1, "the effect of event %s in %s committed without its %s row in the same transaction",
				k.event, m.prof.Effect.Table, m.prof.Inbox.Table))
		}
	}
}

// commitAtomic: a business row change commits with an outbox row (of the
// same event, when the business table names it), and an outbox row with
// a business change.
func (c *checker) commitAtomic() {
	m := c.m
	b := m.prof.Business
	if b == nil {
		return
	}
	c.apply(RuleCommitAtomic)
	// The outbox rows (events, then rows repeating an id) and business
	// rows are filed in commit order: each transaction's are gathered in
	// turn, and the events' reasons follow the business rows', in order.
	outboxAt, businessAt := map[string]bool{}, map[string]bool{}
	var lonely []*event
	ei, di, bi := 0, 0, 0
	for {
		tx := -1
		if ei < m.events.len() {
			tx = m.events.at(ei).tx
		}
		if di < len(m.dupRows) && (tx < 0 || m.dupRows[di].tx < tx) {
			tx = m.dupRows[di].tx
		}
		if bi < m.business.len() && (tx < 0 || int(m.business.at(bi).tx) < tx) {
			tx = int(m.business.at(bi).tx)
		}
		if tx < 0 {
			break
		}
		clear(outboxAt)
		clear(businessAt)
		first := ei
		for ; ei < m.events.len() && m.events.at(ei).tx == tx; ei++ {
			outboxAt[m.events.at(ei).id] = true
		}
		for ; di < len(m.dupRows) && m.dupRows[di].tx == tx; di++ {
			outboxAt[m.dupRows[di].id] = true
		}
		for ; bi < m.business.len() && int(m.business.at(bi).tx) == tx; bi++ {
			r := m.business.at(bi)
			id := m.idOf(r.ev)
			businessAt[id] = true
			ok := len(outboxAt) > 0
			if b.EventID != nil {
				ok = outboxAt[id]
			}
			if !ok {
				what := "an outbox row"
				if b.EventID != nil {
					what = "the outbox row of event " + id
				}
				c.add(m.reason(RuleCommitAtomic, Fail, id, tx, -1, "a row of %s (%s) committed without %s in the same transaction", b.Table, r.op, what))
			}
		}
		for k := first; k < ei; k++ {
			ev := m.events.at(k)
			ok := len(businessAt) > 0
			if b.EventID != nil {
				ok = businessAt[ev.id]
			}
			if !ok {
				lonely = append(lonely, ev)
			}
		}
	}
	for _, ev := range lonely {
		c.add(m.reason(RuleCommitAtomic, Fail, ev.id, ev.tx, -1, "the outbox row of event %s committed without a change of %s (%s) in the same transaction",
			ev.id, b.Table, strings.Join(b.Ops, ", ")))
	}
}

// answer: the client's answers agree with what committed: a success has a
// committed row carrying its token, a failure has none; an unknown outcome
// is settled by the binlog and counted.
func (c *checker) answer() {
	m := c.m
	if c.in.Client == nil || m.prof.Load == nil {
		return
	}
	c.apply(RuleAnswer)
	byToken := map[string]*event{}
	for ev := range m.allRows() {
		if t := ev.token(); t != "" && byToken[t] == nil {
			byToken[t] = ev
		}
	}
	for _, rq := range c.in.Client {
		ev := byToken[rq.Token]
		switch rq.Outcome {
		case OK:
			if ev != nil {
				continue
			}
			st := Fail
			if c.binlogHole {
				st = Inconclusive
			}
			c.add(Reason{Rule: RuleAnswer, Status: st, Partition: -1, Offset: -1, Message: fmt.Sprintf(
				"request %d (token %q) was answered success (status %d) but no committed outbox row carries its token at %s", rq.N, rq.Token, rq.Status, m.prof.Load.Correlate)})
		case Failed:
			if ev == nil {
				continue
			}
			c.add(m.reason(RuleAnswer, Fail, ev.id, ev.tx, -1, "request %d (token %q) was answered failure (status %d) but its outbox row, event %s, committed",
				rq.N, rq.Token, rq.Status, ev.id))
		default:
			m.stats.Unknown++
		}
	}
}

func list(pre string, items []string, post string) string {
	if len(items) == 0 {
		return ""
	}
	return pre + strings.Join(items, ", ") + post
}
