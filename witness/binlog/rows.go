package binlog

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// binaryCollation is the collation id of the "binary" character set: a
// string column with it holds bytes, not text.
const binaryCollation = 63

// kind says how to turn the library's decoded value of a column into a
// Value. It is decided once per table map from the column type and the
// FULL metadata (signedness, collation, enum and set members).
type kind int

const (
	kindPlain    kind = iota // take the decoded value as it is, normalised
	kindUnsigned             // an UNSIGNED integer
	kindText                 // a character column: string
	kindBytes                // a binary string or blob: []byte
	kindEnum                 // ENUM: member name
	kindSet                  // SET: member names, comma-joined
)

type column struct {
	name    string
	kind    kind
	typ     byte
	members []string
}

type table struct {
	schema, name string
	cols         []column
	names        []string // the columns' names, in order
}

func newTable(tm *replication.TableMapEvent) (*table, error) {
	names := tm.ColumnNameString()
	if len(names) != int(tm.ColumnCount) {
		return nil, fmt.Errorf("%w: table %s.%s has %d names for %d columns",
			ErrNoColumnNames, tm.Schema, tm.Table, len(names), tm.ColumnCount)
	}
	unsigned := tm.UnsignedMap()
	collations := tm.CollationMap()
	enums, sets := tm.EnumStrValueMap(), tm.SetStrValueMap()
	t := &table{schema: string(tm.Schema), name: string(tm.Table), cols: make([]column, len(names)), names: names}
	for i, n := range names {
		c := column{name: n, typ: tm.ColumnType[i]}
		switch {
		case tm.IsEnumColumn(i):
			c.kind, c.members = kindEnum, enums[i]
		case tm.IsSetColumn(i):
			c.kind, c.members = kindSet, sets[i]
		case tm.IsNumericColumn(i) && unsigned[i]:
			c.kind = kindUnsigned
		case tm.IsGeometryColumn(i):
			c.kind = kindBytes
		case tm.IsCharacterColumn(i):
			coll, ok := collations[i]
			switch {
			case !ok:
				return nil, fmt.Errorf("%w: no collation for column %s.%s.%s", ErrNoColumnNames, t.schema, t.name, n)
			case coll == binaryCollation:
				c.kind = kindBytes
			default:
				c.kind = kindText
			}
		}
		t.cols[i] = c
	}
	return t, nil
}

// image fills img with row's values by column name.
func (t *table) image(row []any, img map[string]Value) (map[string]Value, error) {
	if len(row) != len(t.cols) {
		return nil, fmt.Errorf("%w: %s.%s row of %d values for %d columns", ErrCorrupt, t.schema, t.name, len(row), len(t.cols))
	}
	for i, v := range row {
		c := t.cols[i]
		val, err := c.value(v)
		if err != nil {
			return nil, fmt.Errorf("%w: column %s.%s.%s: %v", ErrUnsupported, t.schema, t.name, c.name, err)
		}
		img[c.name] = val
	}
	return img, nil
}

// value converts one decoded value. The library returns sized Go integers,
// strings or byte slices depending on the column type; the verifier wants
// one type per SQL family (see Value).
func (c column) value(v any) (Value, error) {
	if v == nil {
		return nil, nil
	}
	switch c.kind {
	case kindUnsigned:
		return unsigned(v, c.typ)
	case kindText:
		switch s := v.(type) {
		case string:
			return s, nil
		case []byte:
			return string(s), nil
		}
	case kindBytes:
		switch s := v.(type) {
		case string:
			return []byte(s), nil
		case []byte:
			return bytes.Clone(s), nil
		}
	case kindEnum:
		i, ok := v.(int64)
		switch {
		case !ok:
		case i == 0:
			return "", nil // the error value '' of an ENUM
		case int(i) <= len(c.members):
			return c.members[i-1], nil
		default:
			return nil, fmt.Errorf("enum index %d of %d members", i, len(c.members))
		}
	case kindSet:
		if bits, ok := v.(int64); ok {
			var names []string
			for i, m := range c.members {
				if bits&(1<<i) != 0 {
					names = append(names, m)
				}
			}
			return strings.Join(names, ","), nil
		}
	default:
		return plain(v)
	}
	return nil, fmt.Errorf("type %d decoded as %T", c.typ, v)
}

func plain(v any) (Value, error) {
	switch x := v.(type) {
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		return x, nil
	case []byte:
		return bytes.Clone(x), nil
	case time.Time:
		return x.UTC(), nil
	case fmt.Stringer: // decimal.Decimal, with SetUseDecimal
		return x.String(), nil
	}
	return nil, fmt.Errorf("decoded as %T", v)
}

// unsigned reinterprets the library's signed integer at its width
// (MEDIUMINT arrives as a sign-extended int32 of 24 bits).
func unsigned(v any, typ byte) (Value, error) {
	switch x := v.(type) {
	case int8:
		return uint64(uint8(x)), nil
	case int16:
		return uint64(uint16(x)), nil
	case int32:
		if typ == mysql.MYSQL_TYPE_INT24 {
			return uint64(uint32(x) & 0xFFFFFF), nil
		}
		return uint64(uint32(x)), nil
	case int64:
		return uint64(x), nil
	case float32, float64, fmt.Stringer:
		return plain(v) // UNSIGNED FLOAT/DOUBLE/DECIMAL: the sign flag changes nothing
	}
	return nil, fmt.Errorf("unsigned column decoded as %T", v)
}

// rows files a rows event the decoder read into the transaction.
func (s *scanner) rows(e *replication.RowsEvent) error {
	if s.tx == nil {
		return fmt.Errorf("%w: rows event outside a transaction", ErrCorrupt)
	}
	tb, err := s.table(e.Table)
	if err != nil {
		return err
	}
	// vet has checked this already; kept because an image without every
	// column would make a wrong history, not a crash
	if !allSet(e.ColumnBitmap1, int(e.ColumnCount)) || (e.ColumnBitmap2 != nil && !allSet(e.ColumnBitmap2, int(e.ColumnCount))) {
		return fmt.Errorf("%w: table %s.%s", ErrPartialImage, tb.schema, tb.name)
	}
	var op Op
	switch e.Type() {
	case replication.EnumRowsEventTypeInsert:
		op = Insert
	case replication.EnumRowsEventTypeUpdate:
		op = Update
	case replication.EnumRowsEventTypeDelete:
		op = Delete
	default:
		return fmt.Errorf("%w: rows event of unknown kind", ErrUnsupported)
	}
	step := 1
	if op == Update {
		step = 2
		if len(e.Rows)%2 != 0 {
			return fmt.Errorf("%w: update rows event with an odd number of images", ErrCorrupt)
		}
	}
	for i := 0; i < len(e.Rows); i += step {
		c := RowChange{Schema: tb.schema, Table: tb.name, Op: op, Query: s.annotate}
		img, err := tb.image(e.Rows[i], s.image(tb))
		if err != nil {
			return err
		}
		switch op {
		case Insert:
			c.After = img
		case Delete:
			c.Before = img
		case Update:
			c.Before = img
			if c.After, err = tb.image(e.Rows[i+1], s.image(tb)); err != nil {
				return err
			}
		}
		s.tx.Changes = append(s.tx.Changes, c)
	}
	return nil
}

func (s *scanner) table(tm *replication.TableMapEvent) (*table, error) {
	if t, ok := s.tables[tm]; ok {
		return t, nil
	}
	t, err := newTable(tm)
	if err != nil {
		return nil, err
	}
	s.tables[tm] = t
	return t, nil
}

func allSet(bitmap []byte, n int) bool {
	for i := range n {
		if i>>3 >= len(bitmap) || bitmap[i>>3]&(1<<(uint(i)&7)) == 0 {
			return false
		}
	}
	return true
}
