package main

// Crafting binlog bytes for TestHostileBundles: walk the events of a
// MariaDB binlog file, change a field, and recompute the event's CRC32 so
// that the event parser, not the checksum check, meets the change.

import (
	"bytes"
	ebin "encoding/binary"
	"hash/crc32"
	"os"
	"testing"
)

// Binlog event types the cases aim at (MariaDB numbering).
const (
	binlogQuery     = 2
	binlogTableMap  = 19
	binlogWriteRows = 23 // WRITE_ROWS_EVENT_V1, what MariaDB writes
	binlogHeader    = 19 // timestamp 4, type 1, server_id 4, size 4, next position 4, flags 2
)

// hostileBinlogEvent is one event of a binlog file: its offset, its size
// as the header says, its type.
type hostileBinlogEvent struct {
	off, size int
	typ       byte
}

// hostileBinlogEvents walks b (a binlog file whose every event carries a
// CRC32, as the example's does) and fails the test on anything else: the
// fixture must be what the cases think it is.
func hostileBinlogEvents(t *testing.T, b []byte) []hostileBinlogEvent {
	t.Helper()
	if !bytes.HasPrefix(b, []byte("\xfebin")) {
		t.Fatal("the example's binlog does not start with the binlog magic")
	}
	var out []hostileBinlogEvent
	for off := 4; off < len(b); {
		if off+binlogHeader > len(b) {
			t.Fatalf("binlog: a cut header at %d", off)
		}
		size := int(ebin.LittleEndian.Uint32(b[off+9:]))
		if size < binlogHeader+4 || off+size > len(b) {
			t.Fatalf("binlog: event at %d has size %d", off, size)
		}
		e := hostileBinlogEvent{off: off, size: size, typ: b[off+4]}
		if crc32.ChecksumIEEE(b[off:off+size-4]) != ebin.LittleEndian.Uint32(b[off+size-4:]) {
			t.Fatalf("binlog: event at %d (type %d) fails its CRC32: the fixture has no checksums?", off, e.typ)
		}
		out = append(out, e)
		off += size
	}
	return out
}

// hostileFixCRC recomputes the CRC32 of the event at off, over its
// original extent (size bytes), whatever its header now says.
func hostileFixCRC(b []byte, off, size int) {
	ebin.LittleEndian.PutUint32(b[off+size-4:], crc32.ChecksumIEEE(b[off:off+size-4]))
}

// hostileBinlogFirst is the first event of type typ at or after the
// evidence's start position (the run's own events).
func hostileBinlogFirst(t *testing.T, evs []hostileBinlogEvent, typ byte, from int) hostileBinlogEvent {
	t.Helper()
	for _, e := range evs {
		if e.typ == typ && e.off >= from {
			return e
		}
	}
	t.Fatalf("binlog: no event of type %d after %d", typ, from)
	return hostileBinlogEvent{}
}

// craftBinlog applies f to the bytes of the bundle's first binlog file and
// writes them back; f fixes the CRCs it breaks (seal then fixes the
// digest and size).
func (w *hostileWorld) craftBinlog(f func(b []byte, evs []hostileBinlogEvent)) {
	w.t.Helper()
	p := w.b(w.doc.Witness.Database.Files[0].Path)
	b, err := os.ReadFile(p)
	w.must(err)
	evs := hostileBinlogEvents(w.t, b)
	f(b, evs)
	w.must(os.WriteFile(p, b, 0o644))
}

// tableMapColumnCount is the offset of a TABLE_MAP event's column count:
// after the post-header (table id 6, flags 2), the database and table
// names (length byte, name, NUL).
func hostileTableMapColumns(b []byte, e hostileBinlogEvent) int {
	p := e.off + binlogHeader + 8
	p += 1 + int(b[p]) + 1
	p += 1 + int(b[p]) + 1
	return p
}
