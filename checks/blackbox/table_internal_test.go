package blackbox

import (
	"cmp"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// TestTableRebuild: a table without a key may hold one image twice; an
// update or delete of that image takes the row written last, then the
// one before; a third finds none, and the rebuild says the window does
// not show the table whole. Rows keep their values by column (an inner
// table only its kept columns), []byte values copied.
func TestTableRebuild(t *testing.T) {
	a := map[string]any{"id": int64(1), "note": "a"}
	b := map[string]any{"id": int64(2), "note": "b", "blob": []byte("x")}
	tb := newTable(&arena{})
	tb.complete = true
	ins := func(row map[string]any) { tb.apply(0, binlog.RowChange{Op: binlog.Insert, After: row}) }
	ins(a)
	ins(b)
	ins(a)
	tb.apply(1, binlog.RowChange{Op: binlog.Update, Before: a, After: map[string]any{"id": int64(3), "note": "c"}})
	if tb.rows.at(2).live() || !tb.rows.at(0).live() {
		t.Fatalf("an update of an image held twice took row 0 live=%v, row 2 live=%v; want the last written (2) gone", tb.rows.at(0).live(), tb.rows.at(2).live())
	}
	tb.apply(2, binlog.RowChange{Op: binlog.Delete, Before: a})
	if tb.rows.at(0).live() || tb.broken != "" {
		t.Fatalf("the second delete of the image: row 0 live=%v, broken %q; want it gone, the table whole", tb.rows.at(0).live(), tb.broken)
	}
	tb.apply(3, binlog.RowChange{Op: binlog.Delete, Before: a})
	if !strings.Contains(tb.broken, "transaction 3") {
		t.Fatalf("a third delete of an image written twice: broken %q; want the rebuild to say transaction 3 found no row", tb.broken)
	}
	r := *tb.rows.at(1)
	if r.get("note") != "b" || r.get("id") != int64(2) || r.get("none") != nil || len(r.shape.cols) != 3 {
		t.Fatalf("row b reads note=%v id=%v none=%v cols=%v", r.get("note"), r.get("id"), r.get("none"), r.shape.cols)
	}
	b["blob"].([]byte)[0] = 'y'
	if got := string(r.get("blob").([]byte)); got != "x" {
		t.Errorf("a []byte value is the image's, changed to %q; want a copy", got)
	}
	if got := *tb.rows.at(3); got.get("id") != int64(3) || got.tx != 1 {
		t.Errorf("the update's after image: id=%v tx=%d; want 3, 1", got.get("id"), got.tx)
	}

	inner := newTable(&arena{})
	inner.keep = map[string]bool{"id": true}
	inner.apply(0, binlog.RowChange{Op: binlog.Insert, After: b})
	if r := *inner.rows.at(0); len(r.shape.cols) != 1 || r.get("id") != int64(2) || r.get("note") != nil {
		t.Errorf("an inner table's row keeps %v; want id only", r.shape.cols)
	}
}

// TestChunks: values added across blocks keep their indexes; at reads and
// changes one in place; all yields every one in order and stops early.
func TestChunks(t *testing.T) {
	var c chunks[int]
	n := 2*chunkLen + 3
	for i := range n {
		if got := c.add(i * 10); got != i {
			t.Fatalf("add #%d returned index %d", i, got)
		}
	}
	if c.len() != n {
		t.Fatalf("len %d; want %d", c.len(), n)
	}
	*c.at(chunkLen) = -1
	want := 0
	for i, v := range c.all() {
		w := i * 10
		if i == chunkLen {
			w = -1
		}
		if i != want || v != w {
			t.Fatalf("all yielded %d: %d; want %d: %d", i, v, want, w)
		}
		want++
	}
	if want != n {
		t.Fatalf("all yielded %d values; want %d", want, n)
	}
	seen := 0
	for range c.all() {
		seen++
		if seen == chunkLen+1 {
			break
		}
	}
	if seen != chunkLen+1 {
		t.Errorf("a loop broken after %d values saw %d", chunkLen+1, seen)
	}
}

// TestRowCodec: every value a row image holds comes back from a row's
// encoding equal and of its type, whatever column is read first; a time
// and a type the encoding does not know are kept aside.
func TestRowCodec(t *testing.T) {
	when := time.Date(2026, 12, 5, 1, 2, 3, 4, time.UTC)
	vals := []any{nil, int64(-7), uint64(1 << 63), 2.5, "", "text", []byte{}, []byte("\x00b"), when, true, json.Number("1.5")}
	var o others
	var enc []byte
	for _, v := range vals {
		enc = o.encode(enc, v)
	}
	for i := len(vals) - 1; i >= 0; i-- {
		if got := o.decode(enc, i); !reflect.DeepEqual(got, vals[i]) {
			t.Errorf("value %d decodes to %#v; want %#v", i, got, vals[i])
		}
	}
	if got := o.decode(enc, len(vals)); got != nil {
		t.Errorf("a value past the last decodes to %#v; want nil", got)
	}
}

// TestRowKey: two images are the same row when their columns' texts are
// the same, whatever the Go types; any other column set or value is
// another row; the image's bytes are not written to.
func TestRowKey(t *testing.T) {
	tb := newTable(&arena{})
	blob := []byte("xy")
	a := tb.rowKey(map[string]any{"id": int64(5), "b": blob, "n": nil})
	if b := tb.rowKey(map[string]any{"n": nil, "id": "5", "b": "xy"}); a != b {
		t.Errorf("the same texts under other types give another key")
	}
	for _, other := range []map[string]any{
		{"id": int64(6), "b": blob, "n": nil},
		{"id": int64(5), "b": blob, "n": "x"},
		{"id": int64(5), "b": blob},
		{"id": int64(5), "b": blob, "m": nil},
		{"id": int64(5), "b": []byte("x"), "n": nil},
	} {
		if tb.rowKey(other) == a {
			t.Errorf("image %v has the key of another", other)
		}
	}
	if string(blob) != "xy" {
		t.Errorf("rowKey wrote into the image's bytes: %q", blob)
	}
}

// TestCellsAgreeWithEqual: the anti-join's fast paths, which compare and
// key rows by their encoded values (sameCells, joinKey), agree with
// equal on decoded values for every pair of a set of values of every
// kind: where sameCells answers, it answers as equal, and two values
// equal says are equal get one join key (two that differ may share one:
// the candidates are compared exactly).
func TestCellsAgreeWithEqual(t *testing.T) {
	vals := []any{nil, int64(1), int64(-7), uint64(1), uint64(1 << 63), 1.0, 0.0, math.Copysign(0, -1), "1", "1.0", "01", "a", "A", "",
		[]byte("a"), []byte("1"), []byte{}, "a\x00b", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tb := newTable(&arena{})
	rows := make([]tableRow, len(vals))
	for i, v := range vals {
		rows[i] = tb.row(map[string]any{"v": v, "w": v}, 0)
	}
	on := []profile.JoinCond{{Outer: "v", Inner: "w"}}
	fast := 0
	for i, a := range rows {
		for j, b := range rows {
			want, wantKnown := equal(a.get("v"), b.get("w"))
			if eq, known := sameCells(a, "v", b, "w"); known {
				fast++
				if eq != want || !wantKnown {
					t.Errorf("sameCells(%#v, %#v) = %v; equal says %v (known %v)", vals[i], vals[j], eq, want, wantKnown)
				}
			}
			if got := joins(on, a, b); got != (want && wantKnown) {
				t.Errorf("joins(%#v, %#v) = %v; want %v", vals[i], vals[j], got, want && wantKnown)
			}
			ka, okA := joinKey(nil, on, a, false)
			kb, okB := joinKey(nil, on, b, true)
			if okA != (vals[i] != nil) || okB != (vals[j] != nil) {
				t.Errorf("joinKey ok %v, %v for %#v, %#v", okA, okB, vals[i], vals[j])
			}
			if okA && okB && want && string(ka) != string(kb) {
				t.Errorf("%#v and %#v: equal %v, keys %q and %q", vals[i], vals[j], want, ka, kb)
			}
		}
	}
	if fast < len(vals) {
		t.Errorf("sameCells answered %d pairs alone; want the texts' and integers' at least", fast)
	}
}

// TestIndexFromRows: a table indexed at its first delete finds every row
// by its image, whatever the types of its values: a whole row's key made
// from its kept values, a row kept in part (keep) by the key filed when
// it was inserted. Each row is deleted by its image, none is missed, and
// the table ends empty and whole.
func TestIndexFromRows(t *testing.T) {
	vals := []any{nil, int64(-7), uint64(1 << 63), 1.5, math.Copysign(0, -1), "", "a\x00b", []byte("x"), []byte{},
		[]byte(nil), time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), json.Number("12")}
	for _, keep := range []map[string]bool{nil, {"id": true}} {
		tb := newTable(&arena{})
		tb.keep, tb.complete = keep, true
		image := func(i int) map[string]any {
			return map[string]any{"id": int64(i), "v": vals[i], "w": vals[len(vals)-1-i]}
		}
		for i := range vals {
			tb.apply(0, binlog.RowChange{Op: binlog.Insert, After: image(i)})
		}
		for i := len(vals) - 1; i >= 0; i-- {
			tb.apply(1, binlog.RowChange{Op: binlog.Delete, Before: image(i)})
			if tb.broken != "" || tb.rows.at(i).live() {
				t.Fatalf("keep %v: delete of row %d (%#v): live %v, broken %q", keep, i, vals[i], tb.rows.at(i).live(), tb.broken)
			}
		}
		for i, r := range tb.rows.all() {
			if r.live() {
				t.Errorf("keep %v: row %d still live", keep, i)
			}
		}
	}
}

// TestSortByHash holds sortByHash to a sort by hash then by the tie,
// over indexes of every size to a few thousand, with hashes that repeat,
// share their top bits, or are the extremes, and ties broken either way.
func TestSortByHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 7, 64, 100, 1000, 4321} {
		index := make([]hashedRow, n)
		for k := range index {
			h := rng.Uint64()
			switch k % 5 {
			case 1:
				h = index[rng.IntN(k)].h // a hash again
			case 2:
				h &^= 1<<40 - 1 // top bits only: a bucket of many
			case 3:
				h = ^uint64(0) * uint64(k%2)
			}
			index[k] = hashedRow{h, int32(k)}
		}
		for _, tie := range []func(x, y hashedRow) int{
			func(x, y hashedRow) int { return cmp.Compare(x.k, y.k) },
			func(x, y hashedRow) int { return cmp.Compare(y.k, x.k) },
		} {
			want := slices.Clone(index)
			slices.SortFunc(want, func(x, y hashedRow) int { return cmp.Or(cmp.Compare(x.h, y.h), tie(x, y)) })
			if got := sortByHash(index, tie); !slices.Equal(got, want) {
				t.Fatalf("%d rows: sortByHash gave %v; want %v", n, got[:min(n, 8)], want[:min(n, 8)])
			}
		}
	}
	for n, want := range map[int]uint{0: 64, 1: 63, 2: 62, 3: 62, 4: 61, 1000: 54, 1 << 20: 43} {
		if got := hashShift(n); got != want {
			t.Errorf("hashShift(%d) = %d; want %d (buckets: the next power of two above n)", n, got, want)
		}
	}
}

// TestSameShape: a row keeps the columns of its own image however the
// images before it were shaped; an image of the last row's columns shares
// its shape (sameShape), one of others makes its own. A whole table keeps
// every column; one kept in part, the keep columns the image has.
func TestSameShape(t *testing.T) {
	var ar arena
	img := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, keep := range []map[string]bool{nil, {"a": true, "c": true}} {
		tb := newTable(&ar)
		tb.keep = keep
		var last *rowShape
		for i, c := range []struct {
			img  map[string]any
			same bool // the last row's shape
		}{
			{img("a", int64(1), "b", "x"), false},
			{img("a", int64(2), "b", "y"), true},
			{img("a", int64(3), "c", "z"), false},
			{img("a", int64(4), "b", "w", "c", nil), keep != nil},
			{img("a", int64(5), "b", "v"), false},
			{img("b", "u"), false},
			{img("a", int64(7), "c", "t", "d", int64(0)), false},
			{img("a", int64(8), "c", "s", "d", int64(1)), true},
		} {
			r := tb.row(c.img, i)
			if same := r.shape == last; same != c.same {
				t.Errorf("keep %v, row %d %v: the last row's shape %v; want %v", keep, i, c.img, same, c.same)
			}
			last = r.shape
			var want []string
			for col := range c.img {
				if keep == nil || keep[col] {
					want = append(want, col)
				}
			}
			slices.Sort(want)
			if !slices.Equal(r.shape.cols, want) {
				t.Errorf("keep %v, row %d %v: columns %v; want %v", keep, i, c.img, r.shape.cols, want)
			}
			for _, col := range want {
				if got := r.get(col); !reflect.DeepEqual(got, c.img[col]) {
					t.Errorf("keep %v, row %d: %s = %#v; want %#v", keep, i, col, got, c.img[col])
				}
			}
		}
	}
}
