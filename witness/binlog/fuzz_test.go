package binlog_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// FuzzScan feeds ScanInputs any bytes (a rows event the fast rows path
// takes read both ways, which must agree), with the checksum of every whole
// event fixed up (as an attacker would fix it) so that the fuzzer's
// mutations reach the decoder rather than die at the checksum. Whatever
// the bytes, the reader must return, with nil or a *FileError, without
// panicking and within the memory its limits allow. The seeds are the
// start of a real binlog from the committed testdata (up to its first
// transaction with rows) and that start rewritten as each case of the
// crash classes of hostile_test.go.
func FuzzScan(f *testing.F) {
	// the first transaction only: the fuzzer minimizes each input it finds
	// interesting, which for the whole 8 KB file takes most of a minute
	seed := firstTransaction(f, seedBinlog(f))
	f.Add(seed)
	for _, cases := range [][]hostileCase{tableMapCases(), queryCases(), rowsCases(), memoryBombCases()} {
		for _, c := range cases {
			b, _ := craft(f, seed, c)
			f.Add(b)
		}
	}
	f.Fuzz(scanAny)
}

// FuzzFastRows is FuzzScan on a binlog whose tables' columns the fast rows
// path reads (fastrows.go; a black-box shape's: integers, VARCHAR, TEXT),
// so that the fuzzer's mutations reach it: whatever it reads, the decoder
// must read the same (FastRowsCheck), and it never panics.
func FuzzFastRows(f *testing.F) {
	b, err := os.ReadFile("../../checks/bbverify/testdata/shapes/cursor-effects/audit/witness/db/binlog.000001")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(firstTransaction(f, b))
	f.Fuzz(scanAny)
}

// scanAny is the fuzz targets' check of one input.
func scanAny(t *testing.T, b []byte) {
	b = fixChecksums(b)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := binlog.ScanInputs([]binlog.Input{{Name: "binlog.000001", R: bytes.NewReader(b)}},
		func(binlog.Transaction) error { return nil })
	runtime.ReadMemStats(&after)
	var fe *binlog.FileError
	if err != nil && !errors.As(err, &fe) {
		t.Fatalf("ScanInputs = %v; want nil or a *FileError", err)
	}
	// the fast rows path reads what the decoder reads, as it reads it
	// (FastRowsCheck, TestMain)
	if err != nil && strings.Contains(err.Error(), "fast rows check") {
		t.Fatalf("ScanInputs = %v", err)
	}
	// a generous bound: the limits' own, doubled, plus buffers
	bound := 2*(binlog.MaxAmplification*uint64(len(b))+binlog.AmplificationAllowance) + 16<<20
	if d := after.TotalAlloc - before.TotalAlloc; d > bound {
		t.Fatalf("reading %d bytes allocated %d; want under %d", len(b), d, bound)
	}
}

// fixChecksums rewrites the CRC32 of every whole event of b, framed by the
// sizes the headers declare.
func fixChecksums(b []byte) []byte {
	b = bytes.Clone(b)
	for off := 4; off+19 <= len(b); {
		size := int(binary.LittleEndian.Uint32(b[off+9:]))
		if size < 23 || off+size > len(b) {
			break
		}
		n := off + size - 4
		binary.LittleEndian.PutUint32(b[n:], crc32.ChecksumIEEE(b[off:n]))
		off += size
	}
	return b
}

// firstTransaction cuts seed after the end of its first rows transaction:
// a small seed that still has every kind of event the reader decodes.
func firstTransaction(tb testing.TB, seed []byte) []byte {
	evs := splitEvents(tb, seed)
	rows := first(tb, evs, evWriteRows)
	for i := rows; i < len(evs); i++ {
		if evs[i].typ() == 16 { // XID
			b, _ := joinEvents(evs[:i+1])
			return b
		}
	}
	tb.Fatal("no commit after the first rows event")
	return nil
}
