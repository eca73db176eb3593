package crosscheck

import (
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// claimRows splits the row changes chs of one transaction among the
// effects of group, in order: each claims its notification (by id) and
// the first unclaimed inbox row its inbox_insert names (inboxRow), or,
// without an inbox_insert, one of its consumer and event id (which
// effectProblems then reports as a row the log does not record). extra
// are the changes no effect claims.
func claimRows(group []effectPair, chs []*change) (own [][]*change, extra []*change) {
	claimed := make([]bool, len(chs))
	own = make([][]*change, len(group))
	claim := func(i int, match func(*binlog.RowChange) bool) {
		for j, ch := range chs {
			if !claimed[j] && match(ch.c) {
				claimed[j] = true
				own[i] = append(own[i], ch)
				return
			}
		}
	}
	for i, p := range group {
		e := p.effect.e
		nid := i64(e.NotificationID)
		claim(i, func(c *binlog.RowChange) bool {
			return is(c, "notification", binlog.Insert) && eqInt(c.After["id"], nid)
		})
		if p.inbox != nil {
			claim(i, inboxRow(p.inbox.e))
			continue
		}
		claim(i, func(c *binlog.RowChange) bool {
			return is(c, "inbox", binlog.Insert) && eqStr(c.After["consumer"], e.Consumer) && eqStr(c.After["event_id"], e.EventID)
		})
	}
	for j, ch := range chs {
		if !claimed[j] {
			extra = append(extra, ch)
		}
	}
	return own, extra
}
