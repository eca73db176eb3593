package binlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// The fast rows path: a rows event whose table's columns are all
// integers (TINYINT to BIGINT), character or binary strings (CHAR,
// VARCHAR, BINARY, VARBINARY) or TEXT and BLOB is decoded here, straight
// into its row images, instead of by go-mysql (which builds a []any per
// image, boxing every value, for rows.go to turn into a map). The values
// are the ones the decoder's path gives, of the same types (rows.go's
// column.value): an event it does not take (another column type, an
// ENUM or SET, a compressed event) goes the decoder's way.
//
// The bytes may be hostile, but vet has read this event before (vetRows:
// every image, every length against what is left) and refused it if
// anything was out of place; the decoding below still reads through a
// cursor that bounds every length, and runs under the scanner's guard.

// fastRowsCheck (tests) decodes every event the fast path takes by the
// decoder's path too, and makes a difference between the two an error.
var fastRowsCheck bool

// fastColumn is how the fast path reads a column: fixed bytes of an
// integer, or a length of prefix bytes and that many bytes of a string.
type fastColumn struct {
	fixed, prefix int
	str           bool
}

// fastLayout says how the fast path reads each column of tb (whose table
// map is tm), or ok is false when it cannot read one of them.
func fastLayout(tm *replication.TableMapEvent, tb *table) (cols []fastColumn, ok bool) {
	if len(tm.ColumnType) != len(tb.cols) || len(tm.ColumnMeta) != len(tb.cols) {
		return nil, false
	}
	cols = make([]fastColumn, len(tb.cols))
	for i, c := range tb.cols {
		t, meta := tm.ColumnType[i], tm.ColumnMeta[i]
		integer := c.kind == kindPlain || c.kind == kindUnsigned
		text := c.kind == kindText || c.kind == kindBytes
		switch {
		case integer && (t == mysql.MYSQL_TYPE_TINY || t == mysql.MYSQL_TYPE_SHORT || t == mysql.MYSQL_TYPE_INT24 ||
			t == mysql.MYSQL_TYPE_LONG || t == mysql.MYSQL_TYPE_LONGLONG):
		case text && (t == mysql.MYSQL_TYPE_VARCHAR || t == mysql.MYSQL_TYPE_VAR_STRING || t == mysql.MYSQL_TYPE_BLOB):
		case text && t == mysql.MYSQL_TYPE_STRING:
			if meta >= 256 && byte(meta>>8)|0x30 != mysql.MYSQL_TYPE_STRING {
				return nil, false // an ENUM or SET (or worse) under CHAR's type
			}
		default:
			return nil, false
		}
		fixed, prefix, err := valueLayout(t, meta)
		if err != nil {
			return nil, false
		}
		cols[i] = fastColumn{fixed: fixed, prefix: prefix, str: text}
	}
	return cols, true
}

// fastRows decodes a rows event the fast path takes (raw whole, body
// without the checksum, at offset off), as event and rows do with the
// decoder's; taken is false, with nothing done, for one it does not take.
func (s *scanner) fastRows(typ replication.EventType, raw, body []byte, off int64) (taken bool, err error) {
	var op Op
	switch typ {
	case replication.WRITE_ROWS_EVENTv1:
		op = Insert
	case replication.UPDATE_ROWS_EVENTv1:
		op = Update
	case replication.DELETE_ROWS_EVENTv1:
		op = Delete
	default:
		return false, nil // compressed, or not a rows event
	}
	if s.tx == nil {
		return false, nil // the decoder's way says what is wrong
	}
	idSize, err := s.tableIDSize(typ)
	if err != nil {
		return false, nil
	}
	c := &cursor{b: body}
	id := mysql.FixedLengthInt(c.take(idSize, "table id"))
	flagBytes := c.take(2, "rows flags")
	n := c.lenenc("column count")
	tm := s.maps[id]
	if c.err != nil || tm == nil || n != tm.ColumnCount {
		return false, nil
	}
	tb, err := s.table(tm)
	if err != nil {
		return false, nil
	}
	layout, ok := s.fastLayouts[tm]
	if !ok {
		layout, ok = fastLayout(tm, tb)
		if !ok {
			return false, nil
		}
		s.fastLayouts[tm] = layout
	}
	// From here on the event is the fast path's: what the decoder's path
	// does with an event before its rows, done here.
	end := binary.LittleEndian.Uint32(raw[13:17])
	if size := binary.LittleEndian.Uint32(raw[9:13]); end != uint32(off)+size {
		return true, fmt.Errorf("%w: %s ends at %d by its header, at %d in the file", ErrCorrupt, typ, end, uint32(off)+size)
	}
	s.info.Events++
	if binary.LittleEndian.Uint16(flagBytes)&replication.RowsEventStmtEndFlag != 0 {
		clear(s.maps) // as the decoder does
	}
	images := 1
	if op == Update {
		images = 2
	}
	cols := len(layout)
	for range images {
		if bm := c.take(bitmapBytes(cols), "columns bitmap"); bm != nil && !allSet(bm, cols) {
			return true, fmt.Errorf("%w: table %s.%s", ErrPartialImage, tb.schema, tb.name)
		}
	}
	if c.err != nil {
		return true, c.err
	}
	first := len(s.tx.Changes)
	for c.left() > 0 {
		ch := RowChange{Schema: tb.schema, Table: tb.name, Op: op, Query: s.annotate}
		img, err := s.fastImage(c, tb, layout)
		if err != nil {
			return true, err
		}
		switch op {
		case Insert:
			ch.After = img
		case Delete:
			ch.Before = img
		case Update:
			ch.Before = img
			if c.left() == 0 {
				return true, fmt.Errorf("%w: update rows event with an odd number of images", ErrCorrupt)
			}
			if ch.After, err = s.fastImage(c, tb, layout); err != nil {
				return true, err
			}
		}
		s.tx.Changes = append(s.tx.Changes, ch)
	}
	if fastRowsCheck {
		return true, s.checkFastRows(raw, tb, s.tx.Changes[first:])
	}
	return true, nil
}

// fastImage decodes one row image at c.
func (s *scanner) fastImage(c *cursor, tb *table, layout []fastColumn) (map[string]Value, error) {
	nulls := c.take(bitmapBytes(len(layout)), "row NULL bitmap")
	img := s.image(tb)
	for i, l := range layout {
		if c.err != nil {
			break
		}
		col := tb.cols[i]
		if nulls[i>>3]&(1<<(uint(i)&7)) != 0 {
			img[col.name] = nil
			continue
		}
		if !l.str {
			img[col.name] = s.fastInt(c.take(l.fixed, "column value"), col)
			continue
		}
		v := c.take(int(min(mysql.FixedLengthInt(c.take(l.prefix, "column value length")), uint64(c.left()+1))), "column value")
		if v == nil {
			break
		}
		switch {
		case col.kind == kindBytes:
			img[col.name] = bytes.Clone(v)
		case col.typ == mysql.MYSQL_TYPE_BLOB:
			img[col.name] = s.boxes.str(string(v)) // the decoder gives a TEXT as bytes, rows.go copies them
		default:
			// the decoder gives a CHAR or VARCHAR as a string over the
			// event's bytes, which are this event's own (readEvent)
			img[col.name] = s.boxes.str(unsafe.String(unsafe.SliceData(v), len(v)))
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	return img, nil
}

// fastInt is an integer column's value as the decoder's path gives it
// (rows.go: int64, or uint64 for an UNSIGNED column); b is nil when the
// cursor ran out, and then the value does not matter.
func (s *scanner) fastInt(b []byte, col column) Value {
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	bits := uint(8 * len(b))
	if col.kind == kindUnsigned || bits == 0 || bits == 64 {
		if col.kind == kindUnsigned {
			return s.boxes.uint(u)
		}
		return s.boxes.int(int64(u))
	}
	if u&(1<<(bits-1)) != 0 { // sign-extend
		u |= ^uint64(0) << bits
	}
	return s.boxes.int(int64(u))
}

// checkFastRows (tests) decodes raw by the decoder's path and compares
// its images with the fast path's.
func (s *scanner) checkFastRows(raw []byte, tb *table, got []RowChange) error {
	ev, err := s.p.Parse(raw)
	if err != nil {
		return fmt.Errorf("fast rows check: the decoder refuses what the fast path read: %v", err)
	}
	e, ok := ev.Event.(*replication.RowsEvent)
	if !ok {
		return fmt.Errorf("fast rows check: the decoder reads a %T", ev.Event)
	}
	var want []map[string]Value
	for _, row := range e.Rows {
		img, err := tb.image(row, map[string]Value{})
		if err != nil {
			return fmt.Errorf("fast rows check: %v", err)
		}
		want = append(want, img)
	}
	var have []map[string]Value
	for _, ch := range got {
		for _, img := range []map[string]Value{ch.Before, ch.After} {
			if img != nil {
				have = append(have, img)
			}
		}
	}
	if !reflect.DeepEqual(have, want) {
		return fmt.Errorf("fast rows check: the fast path read %v, the decoder %v", have, want)
	}
	return nil
}
