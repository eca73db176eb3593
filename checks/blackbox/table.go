package blackbox

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// The tables the invariants read, rebuilt from the binlog as it streams
// (invariants.go says how).

// table is one table rebuilt from the binlog.
type table struct {
	rows chunks[tableRow] // a deleted row is not live
	// byKey finds the live row equal to an image (by rowKey); more the
	// later ones of the same image, if any (a table without a key may
	// hold a row twice): the last written is taken first. They are made
	// at the table's first update or delete (indexed): a table only ever
	// inserted into, as an effect table is, needs no index. Until then,
	// keys are the rowKeys of a table that keeps its rows in part (keep),
	// by row; a whole row's key is made from its values when indexed.
	byKey   map[[16]byte]int
	more    map[[16]byte][]int
	indexed bool
	keys    chunks[[16]byte]
	// complete: its CREATE TABLE is in the window. broken says why the
	// rebuild could not follow it (a before image it does not hold).
	complete bool
	broken   string
	// keep, when set, are the only columns a row keeps (row); keepCols
	// them sorted (sameShape).
	keep     map[string]bool
	keepCols []string
	// shape is the last row's columns, shared with the rows of that
	// shape; scratch is row's buffer.
	shape   *rowShape
	scratch []string
	// ar keeps the rows' values (rowcodec.go), other those it keeps
	// aside; enc is row's buffer; keyCols, keyBuf and keyVal rowKey's.
	ar    *arena
	other others
	enc   []byte
	// keyCols are the last image's columns, sorted.
	keyCols        []string
	keyBuf, keyVal []byte
}

// row is the part of image the table keeps (all of it, or its keep
// columns), written by transaction tx.
func (tb *table) row(image map[string]any, tx int) tableRow {
	if !tb.sameShape(image) {
		cols := tb.scratch[:0]
		for c := range image {
			if tb.keep == nil || tb.keep[c] {
				cols = append(cols, c)
			}
		}
		slices.Sort(cols)
		tb.scratch = cols
		if tb.shape == nil || !slices.Equal(cols, tb.shape.cols) {
			tb.shape = &rowShape{cols: slices.Clone(cols), other: &tb.other}
		}
	}
	enc := tb.enc[:0]
	for _, c := range tb.shape.cols {
		enc = tb.other.encode(enc, image[c])
	}
	tb.enc = enc
	// copied into the arena: not the binlog event's buffer (own, model.go)
	vals := tb.ar.alloc(len(enc)) // never nil: a row of no columns is live
	copy(vals, enc)
	return tableRow{shape: tb.shape, vals: unsafe.SliceData(vals), n: uint32(len(vals)), tx: int32(tx)}
}

// sameShape reports whether the columns row keeps of image are the last
// row's (tb.shape's), as nearly every row's are, found by looking them up
// rather than by listing and sorting the image's: a whole row's when the
// image has exactly the shape's columns, a row kept in part's when the
// keep columns the image has are the shape's.
func (tb *table) sameShape(image map[string]any) bool {
	switch {
	case tb.shape == nil:
		return false
	case tb.keep == nil:
		return sameColumns(tb.shape.cols, image)
	}
	if tb.keepCols == nil {
		tb.keepCols = slices.Sorted(maps.Keys(tb.keep))
	}
	cols, k := tb.shape.cols, 0
	for _, c := range tb.keepCols {
		if _, ok := image[c]; ok {
			if k == len(cols) || cols[k] != c {
				return false
			}
			k++
		}
	}
	return k == len(cols)
}

// tableRow is a row as a table keeps it: its columns' values in the
// order of its shape's columns, encoded in the table's arena
// (rowcodec.go), so that a million rows are not a million maps, nor
// millions of boxed values: vals points at its n bytes there (a row is
// 24 bytes, as there are millions), and is nil once the row is gone.
type tableRow struct {
	shape *rowShape
	vals  *byte
	n     uint32
	tx    int32 // the transaction that wrote it last
}

// bytes are the row's encoded values.
func (r tableRow) bytes() []byte { return unsafe.Slice(r.vals, r.n) }

// rowShape is the columns of rows (sorted), shared by the rows that have
// them, and where their encoding keeps values aside.
type rowShape struct {
	cols  []string
	other *others
}

// live reports whether the row is still in the table.
func (r tableRow) live() bool { return r.vals != nil }

// cell is the tag and bytes of the row's value of column c (rowcodec.go:
// tagNull for NULL or no such column), without making a value of them.
func (r tableRow) cell(c string) (byte, []byte) {
	if i, ok := slices.BinarySearch(r.shape.cols, c); ok {
		return cell(r.bytes(), i)
	}
	return tagNull, nil
}

// get is the row's value of column c (nil: NULL, or no such column).
func (r tableRow) get(c string) any {
	if i, ok := slices.BinarySearch(r.shape.cols, c); ok {
		return r.shape.other.decode(r.bytes(), i)
	}
	return nil
}

var ddlTableRE = regexp.MustCompile("(?i)^\\s*(CREATE\\s+(?:OR\\s+REPLACE\\s+)?TABLE(?:\\s+IF\\s+NOT\\s+EXISTS)?|TRUNCATE(?:\\s+TABLE)?)\\s+`?([A-Za-z0-9_$]+)`?\\s*(?:[(\\s;]|$)")

func newTable(ar *arena) *table {
	tb := &table{ar: ar}
	tb.reset(false)
	return tb
}

// reset empties the table, as a CREATE TABLE (created) or a TRUNCATE in
// the window does; what it keeps of a row stays as it was.
func (tb *table) reset(created bool) {
	*tb = table{keep: tb.keep, keepCols: tb.keepCols, scratch: tb.scratch, ar: tb.ar, enc: tb.enc, complete: tb.complete || created}
}

// prepareTables reads the invariants' anti-joins and makes the tables
// they name, empty, for rebuild to fill as the binlog streams. A table
// that is only ever an inner table keeps of each row only the columns its
// joins compare; an outer table keeps its rows whole, as a reason shows
// them.
func (m *model) prepareTables() {
	if len(m.prof.Invariants) == 0 {
		return
	}
	m.tables = map[string]*table{}
	m.joins = make([]*profile.AntiJoin, len(m.prof.Invariants))
	for i, inv := range m.prof.Invariants {
		m.joins[i] = inv.Join
		if m.joins[i] == nil { // a profile built without Load: read it now
			var err error
			if m.joins[i], err = profile.ParseAntiJoin(inv.SQL); err != nil {
				m.joinErrs = append(m.joinErrs, Reason{Rule: RuleInvariants, Status: Inconclusive, Partition: -1, Offset: -1,
					Message: fmt.Sprintf("invariant %s cannot be evaluated: %v", inv.ID, err)})
			}
		}
	}
	outer := map[string]bool{}
	for _, aj := range m.joins {
		if aj == nil {
			continue
		}
		outer[aj.Outer] = true
		for _, name := range []string{aj.Outer, aj.Inner} {
			if m.tables[name] == nil {
				m.tables[name] = newTable(&m.tar)
			}
		}
	}
	for _, aj := range m.joins {
		if aj == nil || outer[aj.Inner] {
			continue
		}
		tb := m.tables[aj.Inner]
		if tb.keep == nil {
			tb.keep = map[string]bool{}
		}
		for _, c := range aj.On {
			tb.keep[c.Inner] = true
		}
		if aj.NullColumn != "" {
			tb.keep[aj.NullColumn] = true
		}
	}
}

// rebuild applies transaction i (cut to the audited database) to the
// tables the anti-joins name.
func (m *model) rebuild(i int, t binlog.Transaction) {
	if len(m.tables) == 0 {
		return
	}
	for _, s := range t.Statements {
		if mm := ddlTableRE.FindStringSubmatch(s.SQL); mm != nil {
			if tb := m.tables[mm[2]]; tb != nil {
				tb.reset(strings.HasPrefix(strings.ToUpper(strings.TrimSpace(mm[1])), "CREATE"))
			}
		}
	}
	for _, ch := range t.Changes {
		if tb := m.tables[ch.Table]; tb != nil {
			tb.apply(i, ch)
		}
	}
}

func (tb *table) apply(tx int, ch binlog.RowChange) {
	if ch.Op != binlog.Insert {
		tb.index()
		if r, ok := tb.take(tb.rowKey(ch.Before)); ok {
			tb.rows.at(r).vals = nil // gone
		} else if tb.complete && tb.broken == "" {
			tb.broken = fmt.Sprintf("an %s in transaction %d has a before image no earlier transaction wrote", ch.Op, tx)
		}
	}
	if ch.Op != binlog.Delete {
		switch {
		case tb.indexed:
			tb.file(tb.rowKey(ch.After), tb.rows.len())
		case tb.keep != nil: // a row kept in part cannot give its image's key later
			tb.keys.add(tb.rowKey(ch.After))
		}
		tb.rows.add(tb.row(ch.After, tx))
	}
}

// index makes byKey and more from the live rows, once: rows are only
// ever added until then, so that filing them in order now is filing
// them as they came.
func (tb *table) index() {
	if tb.indexed {
		return
	}
	tb.indexed = true
	tb.byKey, tb.more = make(map[[16]byte]int, tb.rows.len()), map[[16]byte][]int{}
	for i, r := range tb.rows.all() {
		switch {
		case !r.live():
		case tb.keep != nil:
			tb.file(*tb.keys.at(i), i)
		default: // a whole row: its image's key, from its values
			tb.file(tb.keyOf(r.shape.cols, func(i int) any { return r.shape.other.decode(r.bytes(), i) }), i)
		}
	}
	tb.keys = chunks[[16]byte]{}
}

// file puts row i, of key k, in the index.
func (tb *table) file(k [16]byte, i int) {
	if _, taken := tb.byKey[k]; taken {
		tb.more[k] = append(tb.more[k], i)
	} else {
		tb.byKey[k] = i
	}
}

// take removes from the index the live row of key k written last, and
// returns it; ok is false when no live row has that image.
func (tb *table) take(k [16]byte) (int, bool) {
	if more := tb.more[k]; len(more) > 0 {
		r := more[len(more)-1]
		if len(more) == 1 {
			delete(tb.more, k)
		} else {
			tb.more[k] = more[:len(more)-1]
		}
		return r, true
	}
	r, ok := tb.byKey[k]
	if ok {
		delete(tb.byKey, k)
	}
	return r, ok
}

// rowKey digests a row image, columns sorted, each column and value
// length-prefixed: two images are the same row when their keys are equal
// (128 bits, two seeded hashes of this process, so that a table of a
// million rows is indexed in a few dozen bytes a row, whatever its
// payloads; the keys are never kept beyond the check).
func (tb *table) rowKey(row map[string]any) [16]byte {
	cols := tb.keyCols
	if !sameColumns(cols, row) {
		cols = cols[:0]
		for c := range row {
			cols = append(cols, c)
		}
		slices.Sort(cols)
		tb.keyCols = cols
	}
	return tb.keyOf(cols, func(i int) any { return row[cols[i]] })
}

// keyOf is rowKey of the image whose sorted columns are cols and whose
// i-th column's value is value(i): of a row image, or of a whole row kept
// (its values decode to the image's, of the same types).
func (tb *table) keyOf(cols []string, value func(i int) any) [16]byte {
	buf := tb.keyBuf[:0]
	for i, c := range cols {
		v := tb.keyVal[:0]
		switch x := value(i).(type) { // as profile.Text, without its allocations
		case nil:
			v = append(v, "\x00NULL"...)
		case string:
			v = append(v, x...)
		case []byte:
			v = append(v, x...)
		case int64:
			v = strconv.AppendInt(v, x, 10)
		case uint64:
			v = strconv.AppendUint(v, x, 10)
		default:
			t, _ := profile.Text(x)
			v = append(v, t...)
		}
		tb.keyVal = v
		buf = strconv.AppendInt(buf, int64(len(c)), 10)
		buf = append(append(append(buf, ':'), c...), '=')
		buf = strconv.AppendInt(buf, int64(len(v)), 10)
		buf = append(append(buf, ':'), v...)
	}
	tb.keyBuf = buf
	var k [16]byte
	binary.LittleEndian.PutUint64(k[:8], maphash.Bytes(rowSeeds[0], buf))
	binary.LittleEndian.PutUint64(k[8:], maphash.Bytes(rowSeeds[1], buf))
	return k
}

// sameColumns reports whether row has exactly the columns cols.
func sameColumns(cols []string, row map[string]any) bool {
	if len(cols) != len(row) || cols == nil {
		return false
	}
	for _, c := range cols {
		if _, ok := row[c]; !ok {
			return false
		}
	}
	return true
}

// rowSeeds seed rowKey's two hashes.
var rowSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
