package binlog_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

func TestSortNames(t *testing.T) {
	cases := []struct {
		in      []string
		want    []string
		wantErr bool
	}{
		{[]string{"b.000010", "b.index", "b.000002", "b.1000000", "b.000009"}, []string{"b.000002", "b.000009", "b.000010", "b.1000000"}, false},
		{[]string{"b.index", "README"}, []string{}, false},
		{[]string{"a.000001", "b.000002"}, nil, true},                  // two sequences
		{[]string{"b.000001", "b.0000001"}, nil, true},                 // one number twice
		{[]string{"b.000001", "b.99999999999999999999999"}, nil, true}, // number out of range
	}
	for _, c := range cases {
		got, err := binlog.SortNames(c.in)
		if (err != nil) != c.wantErr || (!c.wantErr && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("SortNames(%q) = %q, %v; want %q, error %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}

// TestScanInputs: the reader over opened files gives what the reader over
// paths gives, and locates a failing reader's error.
func TestScanInputs(t *testing.T) {
	seed := seedBinlog(t)
	path := filepath.Join(t.TempDir(), "binlog.000001")
	if err := os.WriteFile(path, seed, 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := binlog.ReadAll([]string{path})
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	got, err := binlog.ReadAllInputs([]binlog.Input{{Name: "binlog.000001", R: bytes.NewReader(seed)}})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ReadAllInputs = %d transactions, %v; want the %d of ReadAll", len(got.Transactions), err, len(want.Transactions))
	}
	if got.Files[0].Size != int64(len(seed)) {
		t.Errorf("file size %d; want %d", got.Files[0].Size, len(seed))
	}

	for _, in := range [][]binlog.Input{nil, {{Name: "../binlog.000001", R: bytes.NewReader(seed)}}, {{Name: "binlog.000001"}}} {
		if _, err := binlog.ReadAllInputs(in); err == nil {
			t.Errorf("ReadAllInputs(%+v) = nil; want an error", in)
		}
	}

	broken := errors.New("disk on fire")
	r := io.MultiReader(bytes.NewReader(seed[:1000]), iotest.ErrReader(broken))
	_, err = binlog.ReadAllInputs([]binlog.Input{{Name: "binlog.000001", R: r}})
	var fe *binlog.FileError
	if !errors.Is(err, broken) || !errors.As(err, &fe) || fe.File != "binlog.000001" {
		t.Errorf("ReadAllInputs over a failing reader = %v; want a *FileError wrapping its error", err)
	}
}

// TestEventSize: an event's declared size is held to MaxEventBytes, and
// below it costs no more memory than the bytes that are there.
func TestEventSize(t *testing.T) {
	seed := seedBinlog(t)
	fde := binary.LittleEndian.Uint32(seed[4+9:])
	claim := func(size uint32) []byte {
		b := bytes.Clone(seed[:4+fde])
		binary.LittleEndian.PutUint32(b[4+9:], size)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"more than MaxEventBytes", claim(binlog.MaxEventBytes + 1), binlog.ErrLimit},
		{"under MaxEventBytes, past the end", claim(binlog.MaxEventBytes - 1), binlog.ErrTruncated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := binlog.ReadAllInputs([]binlog.Input{{Name: "binlog.000001", R: bytes.NewReader(c.b)}})
			runtime.ReadMemStats(&after)
			var fe *binlog.FileError
			if !errors.Is(err, c.want) || !errors.As(err, &fe) || fe.Pos != 4 {
				t.Fatalf("ReadAllInputs = %v; want a *FileError at 4 wrapping %q", err, c.want)
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
				t.Errorf("a %d-byte input allocated %d bytes; want under 1 MiB", len(c.b), d)
			}
		})
	}
}
