package binlog

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// What the decoder trusts, checked first.
//
// go-mysql's decoder takes the lengths and counts an event declares at
// their word: it slices past the body (a panic) or allocates what a count
// says (an out-of-memory crash, which no recover stops), and a rows event
// whose images take no bytes makes it loop for ever. So before an event is
// handed to it, vet walks the body in the decoder's own layout and holds
// every length to the bytes that are there, every count to the limits
// (limits.go), and every column type to those MariaDB writes. An event vet
// passes, the decoder reads without leaving its body; the recover around
// the decoder (guard) is the second line, not the first.

// MariaDB event types the reader decodes with go-mysql; any other type is
// judged from its header alone (scanner.headerOnly), so that the decoder
// never sees, say, a MySQL TRANSACTION_PAYLOAD event and inflates it.
var decoded = map[replication.EventType]bool{
	replication.FORMAT_DESCRIPTION_EVENT:                true,
	replication.ROTATE_EVENT:                            true,
	replication.QUERY_EVENT:                             true,
	replication.MARIADB_QUERY_COMPRESSED_EVENT:          true,
	replication.XID_EVENT:                               true,
	replication.INTVAR_EVENT:                            true,
	replication.TABLE_MAP_EVENT:                         true,
	replication.WRITE_ROWS_EVENTv1:                      true,
	replication.UPDATE_ROWS_EVENTv1:                     true,
	replication.DELETE_ROWS_EVENTv1:                     true,
	replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:  true,
	replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1: true,
	replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1: true,
	replication.MARIADB_ANNOTATE_ROWS_EVENT:             true,
	replication.MARIADB_BINLOG_CHECKPOINT_EVENT:         true,
	replication.MARIADB_GTID_EVENT:                      true,
	replication.MARIADB_GTID_LIST_EVENT:                 true,
}

// Costs, in bytes, of what the reader keeps for decoded content, for the
// MaxAmplification bound: a cell of a row image (the decoder's slot and
// boxed value, our map entry), an image besides its cells, and an item of
// a table map's metadata (a column name, an ENUM or SET member, an
// integer: a slice or string header each, in the decoder and in ours).
const (
	costCell  = 96
	costImage = 64
	costItem  = 48
)

// cursor reads a body front to back; the first short read sets err and
// every later read returns zero values.
type cursor struct {
	b   []byte
	pos int
	err error
}

func (c *cursor) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
}

func (c *cursor) left() int { return len(c.b) - c.pos }

// take returns the next n bytes, or nil (and err set) when fewer are left.
func (c *cursor) take(n int, what string) []byte {
	if c.err != nil {
		return nil
	}
	if n < 0 || n > c.left() {
		c.fail("%s of %d bytes, %d left in the event", what, n, c.left())
		return nil
	}
	b := c.b[c.pos : c.pos+n]
	c.pos += n
	return b
}

func (c *cursor) byte(what string) int {
	b := c.take(1, what)
	if b == nil {
		return 0
	}
	return int(b[0])
}

// lenenc reads a length-encoded integer whole (the decoder reads its
// bytes without looking at how many are left).
func (c *cursor) lenenc(what string) uint64 {
	if c.err != nil {
		return 0
	}
	if c.left() == 0 {
		c.fail("%s missing", what)
		return 0
	}
	n := 1
	switch c.b[c.pos] {
	case 0xfc:
		n = 3
	case 0xfd:
		n = 4
	case 0xfe:
		n = 9
	}
	b := c.take(n, what)
	if b == nil {
		return 0
	}
	v, _, _ := mysql.LengthEncodedInt(b)
	return v
}

// count reads a length-encoded count of items that take at least min
// bytes each from what is left, so that no allocation it sizes can exceed
// the body.
func (c *cursor) count(what string, min int) int {
	v := c.lenenc(what)
	if c.err == nil && v > uint64(c.left()/min) {
		c.fail("%s %d with %d bytes left", what, v, c.left())
		return 0
	}
	return int(v)
}

// vet checks body (the event without header and checksum) for the
// decoder and returns the estimated decoded size of the event. h is the
// event's type.
func (s *scanner) vet(typ replication.EventType, body []byte) (cost int64, err error) {
	c := &cursor{b: body}
	switch typ {
	case replication.FORMAT_DESCRIPTION_EVENT:
		// version, server version, create time, header length, then the
		// post-header lengths, checksum algorithm and checksum (the
		// decoder reads the last five from the end)
		c.take(2+50+4+1+5, "format description")
	case replication.ROTATE_EVENT:
		c.take(8, "rotate position")
	case replication.XID_EVENT:
		c.take(8, "xid")
	case replication.INTVAR_EVENT:
		c.take(9, "intvar")
	case replication.MARIADB_GTID_EVENT:
		c.take(12, "gtid")
		if c.byte("gtid flags")&replication.BINLOG_MARIADB_FL_GROUP_COMMIT_ID != 0 {
			c.take(8, "gtid commit id")
		}
	case replication.MARIADB_GTID_LIST_EVENT:
		var n uint32
		if b := c.take(4, "gtid list count"); b != nil {
			n = binary.LittleEndian.Uint32(b) & (1<<28 - 1) // the high 4 bits are flags
		}
		if c.err == nil && int64(n)*16 > int64(c.left()) {
			c.fail("gtid list of %d entries in %d bytes", n, c.left())
		}
		cost = int64(n) * 16
	case replication.MARIADB_ANNOTATE_ROWS_EVENT, replication.MARIADB_BINLOG_CHECKPOINT_EVENT:
		cost = int64(len(body))
	case replication.QUERY_EVENT, replication.MARIADB_QUERY_COMPRESSED_EVENT:
		cost, err = s.vetQuery(c, typ == replication.MARIADB_QUERY_COMPRESSED_EVENT)
	case replication.TABLE_MAP_EVENT:
		var items int64
		items, err = s.vetTableMap(c, typ)
		cost = 4*int64(len(body)) + costItem*items
	default:
		if isRows(typ) {
			cost, err = s.vetRows(c, typ)
		}
	}
	if err == nil {
		err = c.err
	}
	return cost, err
}

func isRows(typ replication.EventType) bool {
	switch typ {
	case replication.WRITE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv1,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return true
	}
	return false
}

// vetQuery: thread id, exec time, schema length, error code, status
// variables length, status variables, schema, NUL, query.
func (s *scanner) vetQuery(c *cursor, compressed bool) (int64, error) {
	c.take(8, "query thread and time")
	schema := c.byte("query schema length")
	c.take(2, "query error code")
	vars := c.take(2, "query status variables length")
	if vars == nil {
		return 0, nil
	}
	c.take(int(binary.LittleEndian.Uint16(vars)), "query status variables")
	c.take(schema+1, "query schema")
	if c.err != nil || !compressed {
		return 2 * int64(c.left()), nil
	}
	n, err := inflatedSize(c.b[c.pos:])
	return 2 * n, err
}

// inflatedSize checks the header of a MariaDB compressed body (one byte
// whose low three bits count the big-endian size bytes that follow, then
// zlib data) and returns the size it declares, which the decoder
// allocates at its word.
func inflatedSize(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: compressed body empty", ErrCorrupt)
	}
	n := int(b[0] & 7)
	if n < 1 || len(b) < 1+n {
		return 0, fmt.Errorf("%w: compressed body with a %d-byte size in %d bytes", ErrCorrupt, n, len(b))
	}
	size := int64(mysql.BFixedLengthInt(b[1 : 1+n]))
	if size > MaxEventBytes {
		return 0, fmt.Errorf("%w: compressed event of %d bytes uncompressed, more than MaxEventBytes (%d)", ErrLimit, size, MaxEventBytes)
	}
	return size, nil
}

// inflate uncompresses a MariaDB compressed body to exactly the size it
// declares (at most MaxEventBytes).
func inflate(b []byte) ([]byte, error) {
	size, err := inflatedSize(b)
	if err != nil {
		return nil, err
	}
	zr, err := zlib.NewReader(bytes.NewReader(b[1+int(b[0]&7):]))
	if err != nil {
		return nil, fmt.Errorf("%w: compressed body: %v", ErrCorrupt, err)
	}
	defer zr.Close()
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(zr, size+1))
	if err != nil || n != size {
		return nil, fmt.Errorf("%w: compressed body of %d bytes declares %d (%v)", ErrCorrupt, n, size, err)
	}
	return out.Bytes(), nil
}

// tableIDSize is the width of the table id in a TABLE_MAP or rows event,
// as the decoder decides it from the format description.
func (s *scanner) tableIDSize(typ replication.EventType) (int, error) {
	if int(typ) > len(s.postHeader) || typ == 0 {
		return 0, fmt.Errorf("%w: the format description gives no header length for %s", ErrCorrupt, typ)
	}
	if s.postHeader[typ-1] == 6 {
		return 4, nil
	}
	return 6, nil
}

// vetTableMap: table id, flags, schema, table, column count, column
// types, metadata, null bitmap, then optional metadata fields (type,
// length, value), of which the decoder reads the ones below.
func (s *scanner) vetTableMap(c *cursor, typ replication.EventType) (items int64, err error) {
	idSize, err := s.tableIDSize(typ)
	if err != nil {
		return 0, err
	}
	c.take(idSize+2, "table id and flags")
	c.take(c.byte("schema length")+1, "schema name")
	c.take(c.byte("table length")+1, "table name")
	n := c.lenenc("column count")
	if c.err != nil {
		return 0, nil
	}
	if n == 0 || n > MaxColumns {
		return 0, fmt.Errorf("%w: table map of %d columns (MaxColumns %d)", ErrCorrupt, n, MaxColumns)
	}
	types := c.take(int(n), "column types")
	meta := c.lenenc("column metadata length")
	mc := &cursor{b: c.take(int(min(meta, uint64(c.left()+1))), "column metadata")}
	if c.err != nil {
		return 0, nil
	}
	for _, t := range types {
		if err := vetColumn(t, mc); err != nil {
			return 0, err
		}
	}
	if mc.err == nil && mc.left() != 0 {
		mc.fail("column metadata of %d bytes, %d used", len(mc.b), mc.pos)
	}
	if mc.err != nil {
		return 0, mc.err
	}
	c.take(bitmapBytes(int(n)), "null bitmap")
	for c.err == nil && c.left() > 0 {
		field := byte(c.byte("optional metadata type"))
		l := c.lenenc("optional metadata length")
		v := &cursor{b: c.take(int(min(l, uint64(c.left()+1))), "optional metadata")}
		if c.err != nil {
			break
		}
		switch field {
		case replication.TABLE_MAP_OPT_META_DEFAULT_CHARSET,
			replication.TABLE_MAP_OPT_META_COLUMN_CHARSET,
			replication.TABLE_MAP_OPT_META_GEOMETRY_TYPE,
			replication.TABLE_MAP_OPT_META_SIMPLE_PRIMARY_KEY,
			replication.TABLE_MAP_OPT_META_PRIMARY_KEY_WITH_PREFIX,
			replication.TABLE_MAP_OPT_META_ENUM_AND_SET_DEFAULT_CHARSET,
			replication.TABLE_MAP_OPT_META_ENUM_AND_SET_COLUMN_CHARSET:
			for v.err == nil && v.left() > 0 {
				v.lenenc("optional metadata integer")
				items++
			}
		case replication.TABLE_MAP_OPT_META_COLUMN_NAME:
			for v.err == nil && v.left() > 0 {
				v.take(v.byte("column name length"), "column name")
				items++
			}
		case replication.TABLE_MAP_OPT_META_SET_STR_VALUE, replication.TABLE_MAP_OPT_META_ENUM_STR_VALUE:
			for v.err == nil && v.left() > 0 {
				for range v.count("ENUM or SET member count", 1) {
					v.take(int(min(v.lenenc("member length"), uint64(v.left()+1))), "ENUM or SET member")
					items++
				}
			}
		}
		if v.err != nil {
			return 0, v.err
		}
	}
	return items, nil
}

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
	if s.changes += rows; s.changes > MaxRowChanges {
		return 0, fmt.Errorf("%w: more than MaxRowChanges (%d) row changes", ErrLimit, MaxRowChanges)
	}
	return rows*int64(images)*(costImage+costCell*int64(cols)) + 2*varBytes, nil
}
