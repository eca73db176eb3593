package checks

import (
	"slices"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The replay model lives in checks/model; the checker creates one per
// scenario (scenario), steps it with the merged events (replay), finishes
// it, turns its violations into reasons, and its derivations read it
// through its read API (metrics.go).

// Model and Source are the replay model's, named here for the checker's
// reading of the logs.
type (
	Model  = model.Model
	Source = model.Source
)

// violationStatus is the verdict status of a model violation.
func violationStatus(v model.Violation) Status {
	if v.Inconclusive {
		return Inconclusive
	}
	return Fail
}

// tableSource yields the rows of one replayed table (or of a TableRows)
// to the SQL load and the digests.
type tableSource struct {
	spec evidence.DigestSpec
	n    int
	row  func(i int, dst []any) []any // appends row i's values (int64, string or nil)
}

// project returns a source of the columns cols of t (each one of t's).
func (t tableSource) project(cols []string) tableSource {
	idx := make([]int, len(cols))
	for i, c := range cols {
		idx[i] = slices.Index(t.spec.Columns, c)
	}
	spec := evidence.DigestSpec{Table: t.spec.Table, Columns: cols}
	var buf []any
	return tableSource{spec: spec, n: t.n, row: func(i int, d []any) []any {
		buf = t.row(i, buf[:0])
		for _, j := range idx {
			d = append(d, buf[j])
		}
		return d
	}}
}

// sources returns the model's replayed end state, one source per
// evidence.DigestSpecs entry, rows in creation order.
func sources(m *Model) []tableSource {
	ts := m.Tables()
	out := make([]tableSource, len(ts))
	for i, t := range ts {
		out[i] = tableSource{spec: t.Spec, n: t.N, row: t.Row}
	}
	return out
}
