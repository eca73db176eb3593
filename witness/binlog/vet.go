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
