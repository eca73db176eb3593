package crosscheck

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// The end state rebuilt from the binlog: every row change of the
// scenario's database applied in log order from its CREATE DATABASE on.
// The verifier digests it like the live tables and loads it into its SQL
// engine for the invariants: it must equal the live digests (and so the
// replayed end state, which the table-digest rule holds against them).

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

// Table is one table of the end state rebuilt from the binlog: the
// columns of its evidence.DigestSpec, in that order, and its rows (int64,
// string or nil), in the order they were first written. It converts to
// checks.TableRows.
type Table struct {
	Table   string
	Columns []string
	Rows    [][]any
}

// EndState rebuilds the scenario's end state from its binlog: the
// evidence.DigestSpecs tables, every row change of its database applied in
// log order from its CREATE DATABASE on. problem, when not empty, says why
// it cannot be rebuilt: a change of a row that the history before it never
// wrote (the witness does not hold the whole history of the database). ok
// is false when the scenario's database is not witnessed.
func (r *Result) EndState() (tables []Table, problem string, ok bool) {
	if r.db == nil {
		return nil, "", false
	}
	tables, problem = binlogTables(r.db.txs)
	return tables, problem, true
}

// binlogTables rebuilds the DigestSpecs tables. A change whose before
// image is not a row of the state so far means that the witness does not
// hold the whole history of the database: problem says where.
func binlogTables(txs []binlog.Transaction) (out []Table, problem string) {
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
		tr := Table{Table: s.Table, Columns: s.Columns}
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

// orderedKeys returns a map's keys, sorted.
func orderedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
