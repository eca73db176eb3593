package blackbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/big"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// invariants: each of the profile's invariants (an anti-join, read by
// evidence/profile) runs on the tables rebuilt from the binlog of the
// window, without a database. A table is rebuilt from its row images in
// commit order: an insert adds its row, an update replaces the row equal
// to its before image, a delete removes it; CREATE TABLE starts it empty
// and TRUNCATE empties it; other DDL (a DROP DATABASE when the run cleans
// up) is not applied, so the tables are as the run's transactions left
// them.
//
// A table whose CREATE TABLE is not in the window existed before it, with
// rows the binlog of the window does not show: an anti-join whose inner
// table is such a table could miss the partner of a row, so rows it
// returns make the rule INCONCLUSIVE, not FAIL. So do rows under a binlog
// hole, and rows of a table whose rebuild found a before image it does
// not hold (the window does not show the table whole). Text compares
// byte for byte (a server's case-insensitive collation is not modelled);
// a number compares with a number or a numeric text by value.
func (c *checker) invariants() {
	m := c.m
	if len(m.prof.Invariants) == 0 {
		return
	}
	c.apply(RuleInvariants)
	for _, r := range m.joinErrs {
		c.add(r)
	}
	joins, tables := m.joins, m.tables
	for i, inv := range m.prof.Invariants {
		aj := joins[i]
		if aj == nil {
			continue
		}
		outer, inner := tables[aj.Outer], tables[aj.Inner]
		rows := antiJoin(aj, outer, inner)
		if len(rows) == 0 {
			continue
		}
		st, why := Fail, ""
		switch {
		case c.binlogHole:
			st, why = Inconclusive, "; the binlog has a hole that could hold their partners"
		case c.in.Unsettled:
			// The end state of a run interrupted before it settled: a
			// partner may be a row the pipeline had yet to write.
			st, why = Inconclusive, "; but the run was interrupted before the pipeline settled, and a partner may be a row still to come"
		case !inner.complete:
			st, why = Inconclusive, fmt.Sprintf("; but %s existed before the run window (its CREATE TABLE is not in it), so a partner may be a row the window does not show", aj.Inner)
		case inner.broken != "" || outer.broken != "":
			st, why = Inconclusive, "; but the window does not show the tables whole: "+strings.TrimPrefix(inner.broken+"; "+outer.broken, "; ")
		}
		var shown []string
		for _, r := range rows[:min(3, len(rows))] {
			shown = append(shown, showRow(*outer.rows.at(r), joinColumns(aj)))
		}
		first := *outer.rows.at(rows[0])
		c.add(m.reason(RuleInvariants, st, "", int(first.tx), -1, "invariant %s returns %d row(s) on the tables rebuilt from the binlog (%s without a matching %s): %s%s",
			inv.ID, len(rows), aj.Outer, aj.Inner, strings.Join(shown, "; "), why))
	}
}

// antiJoin returns the outer rows (indexes) the anti-join returns, once
// per row SQL would return (a LEFT JOIN returns an outer row once per
// matching inner row whose NullColumn is NULL). The inner rows are
// indexed by a hash of their join columns (joinKey), so the work grows
// with the rows, not their product; each candidate is then compared
// exactly, so that two keys of one hash only cost a comparison.
func antiJoin(aj *profile.AntiJoin, outer, inner *table) []int {
	// The index: each live inner row's hash and index (16 bytes a row),
	// in row order.
	index := make([]hashedRow, 0, inner.rows.len())
	var buf []byte
	for k, in := range inner.rows.all() {
		if !in.live() {
			continue
		}
		var ok bool
		if buf, ok = joinKey(buf[:0], aj.On, in, true); ok {
			index = append(index, hashedRow{maphash.Bytes(joinSeed, buf), int32(k)})
		}
	}
	// The entries chained by their hashes' top bits: head[t] is 1 + the
	// first entry whose top bits are t, next[j] 1 + the entry after entry
	// j (0: none), each chain in row order. About one entry a chain, so
	// that a probe is two reads; 24 bytes an inner row. (Sorting the
	// entries, in place, took 0.2 s at a million; into buckets, a copy of
	// them, 16 MB more while the model is at its largest.)
	shift := hashShift(len(index))
	head := make([]int32, 1<<(64-shift))
	next := make([]int32, len(index))
	for j := len(index) - 1; j >= 0; j-- {
		t := index[j].h >> shift
		next[j], head[t] = head[t], int32(j)+1
	}
	// The outer rows are taken a block at a time: the block's keys are
	// hashed, then what their probes read is loaded level by level (the
	// chain's head, its first entry and the next, that entry's row and
	// the row's cells), each level a loop of loads that wait on nothing
	// (as warm does, in ids.go), and then the rows are probed, finding it
	// cached. A row's probe alone waited for memory at each level: most of
	// the rule's time at a million rows.
	type probe struct {
		i  int
		o  tableRow
		h  uint64
		ok bool  // the row's key has no NULL: it is probed
		j  int32 // its chain (head)
	}
	blk := make([]probe, 0, warmRows)
	var out []int
	run := func() {
		for i := range blk {
			if p := &blk[i]; p.ok {
				p.j = head[p.h>>shift]
			}
		}
		var sum uint64
		for _, p := range blk {
			if p.j != 0 {
				sum += index[p.j-1].h + uint64(next[p.j-1])
			}
		}
		for _, p := range blk {
			if p.j != 0 {
				if in := inner.rows.at(int(index[p.j-1].k)); in.live() && in.n > 0 {
					sum += uint64(*in.vals)
				}
			}
		}
		runtime.KeepAlive(sum)
		for _, p := range blk {
			matched, nullMatches := false, 0
			for j := p.j; j != 0; j = next[j-1] {
				e := index[j-1]
				if e.h != p.h {
					continue
				}
				in := *inner.rows.at(int(e.k))
				if !joins(aj.On, p.o, in) {
					continue
				}
				matched = true
				if aj.NullColumn != "" && in.get(aj.NullColumn) == nil {
					nullMatches++
				}
			}
			switch {
			case !matched:
				out = append(out, p.i)
			case nullMatches > 0:
				for range nullMatches {
					out = append(out, p.i)
				}
			}
		}
		blk = blk[:0]
	}
	for i, o := range outer.rows.all() {
		if !o.live() || !passes(aj.Filters, o) {
			continue
		}
		p := probe{i: i, o: o}
		if buf, p.ok = joinKey(buf[:0], aj.On, o, false); p.ok {
			p.h = maphash.Bytes(joinSeed, buf)
		}
		if blk = append(blk, p); len(blk) == cap(blk) {
			run()
		}
	}
	run()
	return out
}

// joinSeed seeds the hash of antiJoin's index.
var joinSeed = maphash.MakeSeed()

// joinKey appends to b the key under which an inner row (inner) is
// indexed, or an outer row looked up: the values the join compares, each
// as a number in lowest terms when it is one (or numeric text), else as
// text, so that any two values equal says are equal have the same key.
// ok is false when one is NULL: such a row joins nothing.
func joinKey(b []byte, on []profile.JoinCond, row tableRow, inner bool) ([]byte, bool) {
	for _, c := range on {
		if c.Lit != nil {
			continue // a literal condition is checked on the candidate
		}
		col := c.Outer
		if inner {
			col = c.Inner
		}
		switch tag, v := row.cell(col); { // most keys without making a value
		case tag == tagNull:
			return b, false
		case tag == tagInt: // as numeric(v).RatString(), without the big.Rat
			b = strconv.AppendInt(append(b, 'n'), int64(binary.LittleEndian.Uint64(v)), 10)
		case tag == tagUint:
			b = strconv.AppendUint(append(b, 'n'), binary.LittleEndian.Uint64(v), 10)
		case (tag == tagText || tag == tagBytes) && !profile.MaybeNumber(unsafe.String(unsafe.SliceData(v), len(v))):
			b = append(append(b, 't'), v...)
		default: // a float, a text that may be a number, a value kept aside
			x := row.get(col)
			if x == nil {
				return b, false
			}
			if r := numeric(x); r != nil {
				b = append(append(b, 'n'), r.RatString()...)
			} else {
				t, _ := profile.Text(x)
				b = append(append(b, 't'), t...)
			}
		}
		b = append(b, 0)
	}
	return b, true
}

func passes(filters []profile.Filter, row tableRow) bool {
	for _, f := range filters {
		v := row.get(f.Column)
		switch f.Op {
		case "is-null":
			if v != nil {
				return false
			}
		case "is-not-null":
			if v == nil {
				return false
			}
		case "=":
			if eq, known := equal(v, literal(f.Lit)); !known || !eq {
				return false
			}
		case "<>":
			if eq, known := equal(v, literal(f.Lit)); !known || eq {
				return false
			}
		}
	}
	return true
}

func joins(on []profile.JoinCond, outer, inner tableRow) bool {
	for _, c := range on {
		if c.Lit == nil {
			if eq, known := sameCells(outer, c.Outer, inner, c.Inner); known {
				if !eq {
					return false
				}
				continue
			}
		}
		want := outer.get(c.Outer)
		if c.Lit != nil {
			want = literal(*c.Lit)
		}
		if eq, known := equal(inner.get(c.Inner), want); !known || !eq {
			return false
		}
	}
	return true
}

// sameCells is equal on two rows' values where their encodings answer it
// alone (known), without making values of them: two texts (or bytes)
// compare byte for byte, two integers of one kind by their 8 bytes. Any
// other pair, or a NULL, is for equal.
func sameCells(a tableRow, ca string, b tableRow, cb string) (eq, known bool) {
	ta, va := a.cell(ca)
	tb, vb := b.cell(cb)
	switch {
	case (ta == tagText || ta == tagBytes) && (tb == tagText || tb == tagBytes),
		ta == tb && (ta == tagInt || ta == tagUint):
		return bytes.Equal(va, vb), true
	}
	return false, false
}

// sqlNumber marks a literal that is a number.
type sqlNumber string

func literal(l profile.Literal) any {
	if l.Number {
		return sqlNumber(l.Text)
	}
	return l.Text
}

// equal is SQL's = on two values: unknown when either is NULL; by value
// when either is a number; else by text.
func equal(a, b any) (eq, known bool) {
	if a == nil || b == nil {
		return false, false
	}
	if isNumber(a) || isNumber(b) {
		x, y := numeric(a), numeric(b)
		if x == nil || y == nil {
			return false, true
		}
		return x.Cmp(y) == 0, true
	}
	sa, _ := profile.Text(a)
	sb, _ := profile.Text(b)
	return sa == sb, true
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, uint64, int, float64, sqlNumber:
		return true
	}
	return false
}

// numeric reads a number, or text that is one, by value.
func numeric(v any) *big.Rat {
	if n, ok := v.(sqlNumber); ok {
		r, ok := new(big.Rat).SetString(string(n))
		if !ok {
			return nil
		}
		return r
	}
	return profile.Number(v)
}

// joinColumns are the outer columns the anti-join compares: a row is
// shown by them first, so that the reader sees what found no partner.
func joinColumns(aj *profile.AntiJoin) []string {
	var out []string
	for _, c := range aj.On {
		if c.Outer != "" {
			out = append(out, c.Outer)
		}
	}
	for _, f := range aj.Filters {
		out = append(out, f.Column)
	}
	return out
}

func showRow(row tableRow, first []string) string {
	cols := slices.Clone(row.shape.cols)
	sort.SliceStable(cols, func(i, j int) bool {
		return slices.Contains(first, cols[i]) && !slices.Contains(first, cols[j])
	})
	var parts []string
	for _, c := range cols {
		v := show(row.get(c))
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		parts = append(parts, c+"="+v)
		if len(parts) == 6 {
			parts = append(parts, "...")
			break
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
