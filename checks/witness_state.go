package checks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// The end state rebuilt from the binlog: every row change of the
// scenario's database applied in log order from its CREATE DATABASE on,
// digested like the live tables and loaded into the SQL engine for the
// invariants. It must equal the live digests (and so the replayed end
// state, which the table-digest rule holds against them).

// stateTable is one table being rebuilt: rows in creation order (nil once
// deleted), and where each distinct row image is.
type stateTable struct {
	rows  []map[string]binlog.Value
	index map[string][]int
}

// rowKey is a row image in a canonical form: its columns sorted.
func rowKey(img map[string]binlog.Value) string {
	keys := make([]string, 0, len(img))
	for k := range img {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(show(img[k]))
		b.WriteByte(';')
	}
	return b.String()
}

func (t *stateTable) remove(img map[string]binlog.Value) bool {
	k := rowKey(img)
	at := t.index[k]
	if len(at) == 0 {
		return false
	}
	t.rows[at[0]] = nil
	t.index[k] = at[1:]
	return true
}

func (t *stateTable) insert(img map[string]binlog.Value) {
	k := rowKey(img)
	t.index[k] = append(t.index[k], len(t.rows))
	t.rows = append(t.rows, img)
}

// binlogTables rebuilds the DigestSpecs tables. A change whose before
// image is not a row of the state so far means that the witness does not
// hold the whole history of the database: problem says where.
func binlogTables(txs []binlog.Transaction) (out []TableRows, problem string) {
	state := map[string]*stateTable{}
	for _, s := range evidence.DigestSpecs {
		state[s.Table] = &stateTable{index: map[string][]int{}}
	}
	for _, t := range txs {
		for _, c := range t.Changes {
			st := state[c.Table]
			if st == nil {
				continue
			}
			if c.Op != binlog.Insert && !st.remove(c.Before) {
				return nil, fmt.Sprintf("%s: the %s changes a %s row that the history before it never wrote", txWhere(t), c.Op, c.Table)
			}
			if c.Op != binlog.Delete {
				st.insert(c.After)
			}
		}
	}
	for _, s := range evidence.DigestSpecs {
		tr := TableRows{Table: s.Table, Columns: s.Columns}
		for _, r := range state[s.Table].rows {
			if r == nil {
				continue
			}
			row := make([]any, len(s.Columns))
			for i, col := range s.Columns {
				row[i] = sqlValue(r[col])
			}
			tr.Rows = append(tr.Rows, row)
		}
		out = append(out, tr)
	}
	return out, ""
}

// sqlValue turns a row image's value into what the SQL load and the
// digest take (int64, string or nil), as database/sql renders a column.
func sqlValue(v binlog.Value) any {
	switch x := v.(type) {
	case nil, int64, string:
		return x
	case uint64:
		if n, ok := vInt(x); ok {
			return n
		}
		return strconv.FormatUint(x, 10)
	case []byte:
		return string(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		return x.Format("2006-01-02 15:04:05.999999")
	}
	return fmt.Sprint(v)
}

// witnessState rebuilds the scenario's end state from its binlog and holds
// it against the live digests and the invariants.
func (c *checker) witnessState(ctx context.Context, sc *evidence.Scenario, db *scenarioDB) {
	id := sc.ID
	tables, problem := binlogTables(db.txs)
	if problem != "" {
		c.fail(id, "witness-state", "the end state cannot be rebuilt from the binlog: %s", problem)
		return
	}
	srcs := make([]tableSource, len(tables))
	live := map[string]evidence.TableDigest{}
	for _, t := range sc.Tables {
		live[t.Table] = t
	}
	for i, t := range tables {
		srcs[i] = t.source()
		d := digestSource(srcs[i])
		if l, ok := live[t.Table]; ok && (l.Rows != d.Rows || l.SHA256 != d.SHA256) {
			c.add(Reason{Rule: "witness-table-digest", Status: Fail, Scenario: id, Field: t.Table, Claimed: digestText(l),
				Recomputed: digestText(d), Message: fmt.Sprintf("table %s rebuilt from the binlog (%d rows) is not the live table the "+
					"evidence digests (%d rows)", t.Table, d.Rows, l.Rows)})
		}
	}
	err := c.eng.reset(ctx)
	if err == nil {
		err = c.eng.load(ctx, usedTables(srcs, c.invs))
	}
	if err != nil {
		c.inconclusive(id, "sql-engine", "the end state rebuilt from the binlog could not be loaded: %v", err)
		return
	}
	c.witnessInvariants(ctx, sc)
}

// witnessInvariants runs every invariant on the end state rebuilt from the
// binlog: each must return no row, as live.
func (c *checker) witnessInvariants(ctx context.Context, sc *evidence.Scenario) {
	live := map[string]int64{}
	for _, r := range sc.Invariants {
		live[r.ID] = r.Rows
	}
	for _, inv := range c.invs {
		n, err := c.eng.countInvariant(ctx, inv)
		if err != nil {
			c.inconclusive(sc.ID, "sql-engine", "invariant %s could not run on the end state rebuilt from the binlog: %v", inv.ID, err)
			return
		}
		l, has := live[inv.ID]
		if n > 0 || (has && l != n) {
			c.add(Reason{Rule: "witness-invariant", Status: Fail, Scenario: sc.ID, Field: inv.ID, Claimed: liveText(l, has),
				Recomputed: strconv.FormatInt(n, 10), Message: fmt.Sprintf("invariant %s returns %d row(s) on the end state rebuilt "+
					"from the binlog (%s live). %s", inv.ID, n, liveText(l, has), inv.Meaning)})
		}
	}
}

func liveText(n int64, ok bool) string {
	if !ok {
		return "none recorded"
	}
	return strconv.FormatInt(n, 10)
}

// orderedKeys returns a map's keys, sorted.
func orderedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
