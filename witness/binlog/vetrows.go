package binlog

import (
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

func bitmapBytes(n int) int { return (n + 7) / 8 }

// Column types MariaDB writes into a table map (MySQL's binary JSON, the
// vector type and the types only used inside a server are not among them).
var columnTypes = map[byte]bool{
	mysql.MYSQL_TYPE_TINY: true, mysql.MYSQL_TYPE_SHORT: true, mysql.MYSQL_TYPE_LONG: true,
	mysql.MYSQL_TYPE_FLOAT: true, mysql.MYSQL_TYPE_DOUBLE: true, mysql.MYSQL_TYPE_TIMESTAMP: true,
	mysql.MYSQL_TYPE_LONGLONG: true, mysql.MYSQL_TYPE_INT24: true, mysql.MYSQL_TYPE_DATE: true,
	mysql.MYSQL_TYPE_TIME: true, mysql.MYSQL_TYPE_DATETIME: true, mysql.MYSQL_TYPE_YEAR: true,
	mysql.MYSQL_TYPE_VARCHAR: true, mysql.MYSQL_TYPE_BIT: true, mysql.MYSQL_TYPE_TIMESTAMP2: true,
	mysql.MYSQL_TYPE_DATETIME2: true, mysql.MYSQL_TYPE_TIME2: true, mysql.MYSQL_TYPE_NEWDECIMAL: true,
	mysql.MYSQL_TYPE_BLOB: true, mysql.MYSQL_TYPE_VAR_STRING: true, mysql.MYSQL_TYPE_STRING: true,
	mysql.MYSQL_TYPE_GEOMETRY: true,
}

// vetColumn reads one column's metadata from mc as the decoder does
// (decodeMeta) and checks that its values decode as the decoder assumes.
func vetColumn(t byte, mc *cursor) error {
	if !columnTypes[t] {
		return fmt.Errorf("%w: column type %d", ErrUnsupported, t)
	}
	var meta uint16
	switch t {
	case mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_NEWDECIMAL:
		if b := mc.take(2, "column metadata"); b != nil {
			meta = uint16(b[0])<<8 | uint16(b[1])
		}
	case mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_BIT:
		if b := mc.take(2, "column metadata"); b != nil {
			meta = binary.LittleEndian.Uint16(b)
		}
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_DOUBLE, mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_GEOMETRY,
		mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP2:
		meta = uint16(mc.byte("column metadata"))
	}
	if mc.err != nil {
		return mc.err
	}
	_, _, err := valueLayout(t, meta)
	return err
}

// valueLayout says how the decoder lays out a value of type t with
// metadata meta (decodeValue): fixed bytes, or (prefix > 0) a
// little-endian length of prefix bytes followed by that many bytes.
func valueLayout(t byte, meta uint16) (fixed, prefix int, err error) {
	length := 0
	if t == mysql.MYSQL_TYPE_STRING {
		// CHAR, ENUM and SET share the type; the real one is in the
		// metadata, with two bits of a long CHAR's length folded in
		if meta >= 256 {
			b0, b1 := byte(meta>>8), byte(meta)
			if b0&0x30 != 0x30 {
				length = int(uint16(b1) | uint16((b0&0x30)^0x30)<<4)
				t = b0 | 0x30
			} else {
				length = int(meta & 0xff)
				t = b0
			}
			if t != mysql.MYSQL_TYPE_STRING && t != mysql.MYSQL_TYPE_ENUM && t != mysql.MYSQL_TYPE_SET {
				return 0, 0, fmt.Errorf("%w: CHAR column of real type %d", ErrUnsupported, t)
			}
		} else {
			length = int(meta)
		}
	}
	bad := func() (int, int, error) {
		return 0, 0, fmt.Errorf("%w: column type %d with metadata %#x", ErrCorrupt, t, meta)
	}
	switch t {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_YEAR:
		return 1, 0, nil
	case mysql.MYSQL_TYPE_SHORT:
		return 2, 0, nil
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_DATE:
		return 3, 0, nil
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_TIMESTAMP:
		return 4, 0, nil
	case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE, mysql.MYSQL_TYPE_DATETIME:
		return 8, 0, nil
	case mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIME2:
		if meta > 6 {
			return bad()
		}
		base := map[byte]int{mysql.MYSQL_TYPE_TIMESTAMP2: 4, mysql.MYSQL_TYPE_DATETIME2: 5, mysql.MYSQL_TYPE_TIME2: 3}[t]
		return base + int(meta+1)/2, 0, nil
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		prec, scale := int(meta>>8), int(meta&0xff)
		if prec < 1 || prec > 65 || scale > 38 || scale > prec {
			return bad()
		}
		comp := [...]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}
		i, f := prec-scale, scale
		return i/9*4 + comp[i%9] + f/9*4 + comp[f%9], 0, nil
	case mysql.MYSQL_TYPE_BIT:
		nbits := int(meta>>8)*8 + int(meta&0xff)
		if nbits < 1 || nbits > 64 {
			return bad()
		}
		return (nbits + 7) / 8, 0, nil
	case mysql.MYSQL_TYPE_ENUM:
		if l := int(meta & 0xff); l == 1 || l == 2 {
			return l, 0, nil
		}
		return bad()
	case mysql.MYSQL_TYPE_SET:
		if l := int(meta & 0xff); l >= 1 && l <= 8 {
			return l, 0, nil
		}
		return bad()
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY:
		if meta < 1 || meta > 4 {
			return bad()
		}
		return 0, int(meta), nil
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		length = int(meta)
		fallthrough
	case mysql.MYSQL_TYPE_STRING:
		if length < 256 {
			return 0, 1, nil
		}
		return 0, 2, nil
	}
	return 0, 0, fmt.Errorf("%w: column type %d", ErrUnsupported, t)
}

// vetRows: table id, flags, column count, the columns-present bitmap (two
// for an update: before and after image), then images to the end of the
// body, possibly compressed. Each image is a NULL bitmap and the non-NULL
// values. The table map the event refers to must be the one the decoder
// will use (scanner.maps mirrors the decoder's).
func (s *scanner) vetRows(c *cursor, typ replication.EventType) (int64, error) {
	idSize, err := s.tableIDSize(typ)
	if err != nil {
		return 0, err
	}
	id := mysql.FixedLengthInt(c.take(idSize, "table id"))
	c.take(2, "rows flags")
	n := c.lenenc("column count")
	if c.err != nil {
		return 0, nil
	}
	tm, ok := s.maps[id]
	if !ok {
		return 0, fmt.Errorf("%w: rows event for table id %d without its table map", ErrCorrupt, id)
	}
	if n != tm.ColumnCount {
		return 0, fmt.Errorf("%w: rows event of %d columns for table %s.%s of %d", ErrCorrupt, n, tm.Schema, tm.Table, tm.ColumnCount)
	}
	images := 1
	if typ == replication.UPDATE_ROWS_EVENTv1 || typ == replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1 {
		images = 2
	}
	cols := int(n)
	for range images {
		if bm := c.take(bitmapBytes(cols), "columns bitmap"); bm != nil && !allSet(bm, cols) {
			return 0, fmt.Errorf("%w: table %s.%s", ErrPartialImage, tm.Schema, tm.Table)
		}
	}
	if c.err != nil {
		return 0, nil
	}
	data := c.b[c.pos:]
	if typ >= replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1 {
		if data, err = inflate(data); err != nil {
			return 0, err
		}
	}
	layouts := make([][2]int, cols)
	for i := range cols {
		f, p, err := valueLayout(tm.ColumnType[i], tm.ColumnMeta[i])
		if err != nil {
			return 0, err
		}
		layouts[i] = [2]int{f, p}
	}
	d := &cursor{b: data}
	var rows, varBytes int64
	for d.err == nil && d.left() > 0 {
		for range images {
			nulls := d.take(bitmapBytes(cols), "row NULL bitmap")
			for i := 0; i < cols && d.err == nil; i++ {
				if nulls[i>>3]&(1<<(uint(i)&7)) != 0 {
					continue
				}
				fixed, prefix := layouts[i][0], layouts[i][1]
				if prefix == 0 {
					d.take(fixed, "column value")
					continue
				}
				l := mysql.FixedLengthInt(d.take(prefix, "column value length"))
				d.take(int(min(l, uint64(d.left()+1))), "column value")
				varBytes += int64(l)
			}
		}
		rows++
	}
	if d.err != nil {
		return 0, d.err
	}
	if s.changes += rows; s.changes > s.maxChanges {
		return 0, fmt.Errorf("%w: more than %d row changes", ErrLimit, s.maxChanges)
	}
	return rows*int64(images)*(costImage+costCell*int64(cols)) + 2*varBytes, nil
}
