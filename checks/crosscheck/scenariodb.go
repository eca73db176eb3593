package crosscheck

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// A scenario's database as the binlog shows it: every row change of its
// transactions, each to be explained by exactly one logged event.

// change is one row change with its transaction; used once an event
// explains it.
type change struct {
	tx   *binlog.Transaction
	c    *binlog.RowChange
	used bool
}

// scenarioDB indexes the transactions of one scenario's database.
type scenarioDB struct {
	schema string
	txs    []binlog.Transaction
	// changes are the row changes of the transactions that are not the
	// scenario's setup (DDL, migrations, the marker), in log order.
	changes []*change
	byTx    map[*binlog.Transaction][]*change
	// ddl are transactions of statements that are not DDL (a statement a
	// server logged as text): no event explains them.
	notDDL []*binlog.Transaction
}

// setupTables are written by the migrations, not by an actor.
var setupTables = map[string]bool{"schema_migrations": true, "ofa_marker": true}

func newScenarioDB(schema string, txs []binlog.Transaction) *scenarioDB {
	d := &scenarioDB{schema: schema, txs: txs, byTx: map[*binlog.Transaction][]*change{}}
	for i := range d.txs {
		t := &d.txs[i]
		for _, s := range t.Statements {
			if !isDDL(s.SQL) {
				d.notDDL = append(d.notDDL, t)
				break
			}
		}
		if len(t.Changes) > 0 && !slices.ContainsFunc(t.Changes, func(c binlog.RowChange) bool { return !setupTables[c.Table] }) {
			continue
		}
		for j := range t.Changes {
			ch := &change{tx: t, c: &t.Changes[j]}
			d.changes = append(d.changes, ch)
			d.byTx[t] = append(d.byTx[t], ch)
		}
	}
	return d
}

func isDDL(sql string) bool {
	f := strings.Fields(strings.ToUpper(sql))
	return len(f) > 0 && slices.Contains([]string{"CREATE", "DROP", "ALTER", "RENAME", "TRUNCATE"}, f[0])
}

// find returns the unused changes that match.
func (d *scenarioDB) find(match func(*binlog.RowChange) bool) []*change {
	var out []*change
	for _, ch := range d.changes {
		if !ch.used && match(ch.c) {
			out = append(out, ch)
		}
	}
	return out
}

func (d *scenarioDB) use(chs ...*change) {
	for _, ch := range chs {
		ch.used = true
	}
}

// Column values of a row image (binlog.Value): integers arrive as int64
// or uint64, text as string.

func vInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

func vStr(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

func eqInt(v any, want int64) bool  { n, ok := vInt(v); return ok && n == want }
func eqStr(v any, want string) bool { s, ok := vStr(v); return ok && s == want }

// is tells whether c is op on table.
func is(c *binlog.RowChange, table string, op binlog.Op) bool { return c.Table == table && c.Op == op }

// show renders a column value for a message.
func show(v any) string {
	if v == nil {
		return "NULL"
	}
	if s, ok := vStr(v); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// describe names a row change for a message: "outbox update".
func describe(c *binlog.RowChange) string { return c.Table + " " + string(c.Op) }

// txDescribe lists a transaction's row changes: "stock update, orders insert".
func txDescribe(chs []*change) string {
	parts := make([]string, len(chs))
	for i, ch := range chs {
		parts[i] = describe(ch.c)
	}
	return strings.Join(parts, ", ")
}

// tablesInOrder returns the tables a transaction writes, in order, a table
// repeated only when another one was written in between: what an
// order_committed's writes list.
func tablesInOrder(chs []*change) []string {
	var out []string
	for _, ch := range chs {
		if len(out) == 0 || out[len(out)-1] != ch.c.Table {
			out = append(out, ch.c.Table)
		}
	}
	return out
}

// changedColumns returns the columns an update changed, sorted.
func changedColumns(c *binlog.RowChange) []string {
	var out []string
	for k, b := range c.Before {
		if show(b) != show(c.After[k]) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// onlyChanged returns the problem when an update changed a column that
// is not in allowed.
func onlyChanged(c *binlog.RowChange, allowed ...string) string {
	var extra []string
	for _, k := range changedColumns(c) {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return ""
	}
	return "it also changed " + strings.Join(extra, ", ")
}

func payloadSHA256(v any) string {
	s, _ := vStr(v)
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
