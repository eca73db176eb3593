package binlog_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// Hostile binlogs: real files from the committed bundles with one event
// rewritten, sizes, end positions and checksums fixed up, so that the
// decoder, not the checksum, faces the bytes (issue #20). Each case was a
// panic or an out-of-memory crash of the whole process before the reader
// checked what the decoder trusts; each must now be a *FileError at the
// rewritten event, after little work and little memory.

// Event type codes of the events these tests rewrite.
const (
	evQuery           = 2
	evFormat          = 15
	evTableMap        = 19
	evWriteRows       = 23
	evGTIDList        = 163
	evCompressedQuery = 165
)

// seedBinlog returns the smallest committed real binlog file (a run's
// database witness), so that the cases follow the testdata when it is
// regenerated.
func seedBinlog(tb testing.TB) []byte {
	tb.Helper()
	var best string
	var size int64
	for _, pat := range []string{
		"../../checks/testdata/*/*/u80/witness/db/binlog.0*",
		"../../checks/testdata/*/u80/witness/db/binlog.0*",
		"../../evidence/example/u80/witness/db/binlog.0*",
	} {
		paths, _ := filepath.Glob(pat)
		for _, p := range paths {
			st, err := os.Stat(p)
			if err == nil && st.Mode().IsRegular() && (best == "" || st.Size() < size) {
				best, size = p, st.Size()
			}
		}
	}
	if best == "" {
		tb.Fatal("no committed binlog file under checks/testdata or evidence/example")
	}
	b, err := os.ReadFile(best)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// event is one framed event: its 19-byte header and its body without the
// CRC32 checksum (the committed files are written with binlog_checksum=CRC32).
type event struct {
	header []byte
	body   []byte
}

func (e event) typ() byte { return e.header[4] }

func splitEvents(tb testing.TB, b []byte) []event {
	tb.Helper()
	var evs []event
	for off := 4; off < len(b); {
		size := int(binary.LittleEndian.Uint32(b[off+9:]))
		evs = append(evs, event{
			header: bytes.Clone(b[off : off+19]),
			body:   bytes.Clone(b[off+19 : off+size-4]),
		})
		off += size
	}
	return evs
}

// joinEvents frames evs as a binlog file: each event's size, end position
// and checksum made to fit its (possibly rewritten) body. offs are the
// events' offsets.
func joinEvents(evs []event) (b []byte, offs []int) {
	b = []byte{0xfe, 'b', 'i', 'n'}
	for _, e := range evs {
		offs = append(offs, len(b))
		size := 19 + len(e.body) + 4
		h := bytes.Clone(e.header)
		binary.LittleEndian.PutUint32(h[9:], uint32(size))
		binary.LittleEndian.PutUint32(h[13:], uint32(len(b)+size))
		raw := append(h, e.body...)
		raw = binary.LittleEndian.AppendUint32(raw, crc32.ChecksumIEEE(raw))
		b = append(b, raw...)
	}
	return b, offs
}

// first returns the index of the first event of type typ.
func first(tb testing.TB, evs []event, typ byte) int {
	tb.Helper()
	for i, e := range evs {
		if e.typ() == typ {
			return i
		}
	}
	tb.Fatalf("no event of type %d in the seed binlog", typ)
	return -1
}

// tableMapLayout returns the offsets in a TABLE_MAP body of the column
// count, the first column type and the metadata block (MariaDB writes a
// 6-byte table id).
func tableMapLayout(body []byte) (count, types, meta int) {
	pos := 6 + 2
	pos += 1 + int(body[pos]) + 1 // schema
	pos += 1 + int(body[pos]) + 1 // table
	n := int(body[pos])           // fewer than 251 columns: one byte
	return pos, pos + 1, pos + 1 + n
}

// hostileCase rewrites the seed and names what the reader must say.
type hostileCase struct {
	name string
	typ  byte // the rewritten event is the first of this type
	edit func(tb testing.TB, evs []event, i int)
	want error
}

// craft applies c to the seed file and returns the file and the offset of
// the rewritten event.
func craft(tb testing.TB, seed []byte, c hostileCase) ([]byte, int) {
	tb.Helper()
	evs := splitEvents(tb, seed)
	i := first(tb, evs, c.typ)
	c.edit(tb, evs, i)
	b, offs := joinEvents(evs)
	return b, offs[i]
}

// checkHostile reads each case's file and wants a *FileError wrapping
// c.want at the rewritten event, with less than maxAlloc bytes allocated.
func checkHostile(t *testing.T, cases []hostileCase) {
	t.Helper()
	seed := seedBinlog(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, off := craft(t, seed, c)
			path := filepath.Join(t.TempDir(), "binlog.000001")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			const maxAlloc = 16 << 20
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := binlog.ReadAll([]string{path})
			runtime.ReadMemStats(&after)
			var fe *binlog.FileError
			if !errors.As(err, &fe) || !errors.Is(err, c.want) {
				t.Fatalf("ReadAll = %v; want a *FileError wrapping %q", err, c.want)
			}
			if fe.File != "binlog.000001" || fe.Pos != int64(off) {
				t.Errorf("error located at %s:%d; want binlog.000001:%d", fe.File, fe.Pos, off)
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > maxAlloc {
				t.Errorf("reading a %d-byte file allocated %d bytes; want under %d", len(b), d, maxAlloc)
			}
			t.Logf("%v", err)
		})
	}
}

// TestHostileTableMap: a TABLE_MAP whose declared lengths run past its
// body made the decoder slice out of range (a panic, exit 2).
func TestHostileTableMap(t *testing.T) { checkHostile(t, tableMapCases()) }

func tableMapCases() []hostileCase {
	return []hostileCase{
		{"column count past the body", evTableMap, func(tb testing.TB, evs []event, i int) {
			count, _, _ := tableMapLayout(evs[i].body)
			evs[i].body[count] = 250
		}, binlog.ErrCorrupt},
		{"schema length past the body", evTableMap, func(tb testing.TB, evs []event, i int) {
			evs[i].body = evs[i].body[:8+1+int(evs[i].body[8])+1+4]
			evs[i].body[8] = 255
		}, binlog.ErrCorrupt},
		{"metadata length past the body", evTableMap, func(tb testing.TB, evs []event, i int) {
			_, _, meta := tableMapLayout(evs[i].body)
			evs[i].body[meta] = 250
		}, binlog.ErrCorrupt},
		{"column name past its block", evTableMap, func(tb testing.TB, evs []event, i int) {
			// append a COLUMN_NAME field whose one name claims 200 bytes
			evs[i].body = append(evs[i].body, 4, 2, 200, 'x')
		}, binlog.ErrCorrupt},
		{"JSON column type", evTableMap, func(tb testing.TB, evs []event, i int) {
			// MariaDB never logs MySQL's binary JSON; its decoder recurses
			_, types, _ := tableMapLayout(evs[i].body)
			evs[i].body[types] = 245
		}, binlog.ErrUnsupported},
	}
}

// TestHostileQueryStatusVars: a QUERY event whose status-variable or
// schema length runs past its body made the decoder slice out of range.
func TestHostileQueryStatusVars(t *testing.T) { checkHostile(t, queryCases()) }

func queryCases() []hostileCase {
	return []hostileCase{
		{"status vars length past the body", evQuery, func(tb testing.TB, evs []event, i int) {
			binary.LittleEndian.PutUint16(evs[i].body[11:], 0xffff)
		}, binlog.ErrCorrupt},
		{"schema length past the body", evQuery, func(tb testing.TB, evs []event, i int) {
			sv := int(binary.LittleEndian.Uint16(evs[i].body[11:]))
			evs[i].body = evs[i].body[:13+sv+3]
			evs[i].body[8] = 200
		}, binlog.ErrCorrupt},
		{"body shorter than the fixed part", evQuery, func(tb testing.TB, evs []event, i int) {
			evs[i].body = evs[i].body[:5]
		}, binlog.ErrCorrupt},
	}
}

// TestHostileRowsEvent: a rows event whose column count disagrees with its
// table map made the decoder slice its bitmaps out of range.
func TestHostileRowsEvent(t *testing.T) { checkHostile(t, rowsCases()) }

func rowsCases() []hostileCase {
	return []hostileCase{
		{"column count past the body", evWriteRows, func(tb testing.TB, evs []event, i int) {
			evs[i].body[8] = 250
		}, binlog.ErrCorrupt},
		{"row image cut short", evWriteRows, func(tb testing.TB, evs []event, i int) {
			evs[i].body = evs[i].body[:len(evs[i].body)-3]
		}, binlog.ErrCorrupt},
		{"a byte after the last image", evWriteRows, func(tb testing.TB, evs []event, i int) {
			evs[i].body = append(evs[i].body, 0)
		}, binlog.ErrCorrupt},
	}
}

// TestHostileMemoryBomb: a few bytes that declare a huge count made the
// decoder allocate without bound: the process died of out-of-memory, or
// looped for ever appending rows. Each is now refused having allocated a
// few megabytes at most (checkHostile measures TotalAlloc).
func TestHostileMemoryBomb(t *testing.T) { checkHostile(t, memoryBombCases()) }

func memoryBombCases() []hostileCase {
	return []hostileCase{
		{"rows event of zero columns", evWriteRows, func(tb testing.TB, evs []event, i int) {
			// every image then takes no bytes: the decoder never got past
			// the first and appended empty rows until memory ran out
			evs[i].body[8] = 0
		}, binlog.ErrCorrupt},
		{"thirty thousand images of NULLs", evWriteRows, func(tb testing.TB, evs []event, i int) {
			// each image one byte (a NULL bitmap of three columns, all
			// set) decodes to three values, a map and a row change:
			// hundreds of bytes of memory per byte read
			if n := evs[i].body[8]; n != 3 {
				tb.Fatalf("first rows event of %d columns; the case assumes 3", n)
			}
			evs[i].body = append(evs[i].body[:10], bytes.Repeat([]byte{7}, 30000)...)
		}, binlog.ErrLimit},
		{"enum members count", evTableMap, func(tb testing.TB, evs []event, i int) {
			// an ENUM_STR_VALUE field whose member count is 2^36
			evs[i].body = append(evs[i].body, 6, 9, 0xfe, 0, 0, 0, 0, 16, 0, 0, 0)
		}, binlog.ErrCorrupt},
		{"gtid list count", evGTIDList, func(tb testing.TB, evs []event, i int) {
			binary.LittleEndian.PutUint32(evs[i].body, 1<<28-1)
		}, binlog.ErrCorrupt},
		{"compressed query of 2^40 bytes", evQuery, func(tb testing.TB, evs []event, i int) {
			evs[i].header[4] = evCompressedQuery
			sv := int(binary.LittleEndian.Uint16(evs[i].body[11:]))
			q := 13 + sv + int(evs[i].body[8]) + 1
			evs[i].body = append(evs[i].body[:q], 0x86, 1, 0, 0, 0, 0, 0, 0x78, 0x9c)
		}, binlog.ErrLimit},
	}
}
