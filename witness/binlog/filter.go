package binlog

import (
	"iter"
	"strconv"
)

// ForSchema returns t cut down to one database: only its row changes in
// schema and its statements whose default database was schema. ok is false
// when nothing of t is in schema. A t wholly in schema is returned as
// it is, its slices shared with the caller's. A run works in databases of its own
// (ofa_<run id>_<scenario>), so this is how the verifier takes one
// scenario's history out of a server's log.
func (t Transaction) ForSchema(schema string) (_ Transaction, ok bool) {
	if t.inSchema(schema) {
		return t, true // nothing to cut: t as it is, its slices shared
	}
	var changes []RowChange
	for _, c := range t.Changes {
		if c.Schema == schema {
			changes = append(changes, c)
		}
	}
	var stmts []Statement
	for _, s := range t.Statements {
		if s.Schema == schema {
			stmts = append(stmts, s)
		}
	}
	t.Changes, t.Statements = changes, stmts
	return t, len(changes)+len(stmts) > 0
}

// inSchema says whether every change and statement of t is of schema
// (and t has one).
func (t Transaction) inSchema(schema string) bool {
	for _, c := range t.Changes {
		if c.Schema != schema {
			return false
		}
	}
	for _, s := range t.Statements {
		if s.Schema != schema {
			return false
		}
	}
	return len(t.Changes)+len(t.Statements) > 0
}

// InSchema streams the transactions of seq that touch schema, each cut
// down to it (ForSchema). Errors pass through.
func InSchema(seq iter.Seq2[Transaction, error], schema string) iter.Seq2[Transaction, error] {
	return func(yield func(Transaction, error) bool) {
		for t, err := range seq {
			if err != nil {
				yield(t, err)
				return
			}
			if t, ok := t.ForSchema(schema); ok && !yield(t, nil) {
				return
			}
		}
	}
}

// After reports whether t begins at or after p in the same server's log:
// a later file, or the same file at or past p.Pos. It is how a run that
// shares a server keeps only the transactions after its start position.
func (t Transaction) After(p Position) bool {
	tb, tn, ok1 := splitName(t.File)
	pb, pn, ok2 := splitName(p.File)
	if !ok1 || !ok2 || tb != pb {
		return false
	}
	return tn > pn || (tn == pn && t.Pos >= p.Pos)
}

func splitName(name string) (base string, n uint64, ok bool) {
	m := fileNameRE.FindStringSubmatch(name)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.ParseUint(m[2], 10, 64)
	return m[1], n, err == nil
}
