package binlog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestGuardRecoversPanic: a panic under guard (the decoder's, or the
// reader's own decoding, on bytes vet let through) is an ErrCorrupt
// error, never a crash.
func TestGuardRecoversPanic(t *testing.T) {
	err := func() (err error) {
		defer guard(&err)
		var b []byte
		_ = b[3]
		return nil
	}()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("guard = %v; want ErrCorrupt", err)
	}
	t.Logf("%v", err)
}

// TestDecodedSizeOfARealBinlog measures what the MaxAmplification bound
// holds: the decoded size the reader estimates for every committed real
// binlog, relative to its size. Real files must stay well inside the
// bound (under half of it), or a larger real run would be refused.
func TestDecodedSizeOfARealBinlog(t *testing.T) {
	var paths []string
	for _, pat := range []string{
		"../../checks/testdata/*/*/u80/witness/db/binlog.0*",
		"../../checks/testdata/*/u80/witness/db/binlog.0*",
		"../../evidence/example/u80/witness/db/binlog.0*",
	} {
		p, _ := filepath.Glob(pat)
		paths = append(paths, p...)
	}
	if len(paths) == 0 {
		t.Fatal("no committed binlog file")
	}
	worst := 0.0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		s := newScanner(func(Transaction) error { return nil })
		_, err = s.file(filepath.Base(p), f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		ratio := float64(s.cost) / float64(s.read)
		worst = max(worst, ratio)
		t.Logf("%s: %d bytes decode to about %d (%.1fx)", p, s.read, s.cost, ratio)
	}
	if worst > MaxAmplification/2 {
		t.Errorf("a real binlog decodes to %.1f times its size; want under half of MaxAmplification (%d)", worst, MaxAmplification)
	}
}

// TestReadCountLimits: a read is refused with ErrLimit one transaction or
// one row change past its bound, and not at it; a streamed read (the
// black-box verifier's) has the larger bounds, a History's the smaller.
func TestReadCountLimits(t *testing.T) {
	path := "../../evidence/example/u80/witness/db/binlog.000001"
	read := func(txns, changes int64) (int64, int64, error) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		s := newScanner(func(Transaction) error { return nil })
		s.allowGaps = true
		s.maxTxns, s.maxChanges = txns, changes
		_, err = s.file(filepath.Base(path), f)
		return s.txns, s.changes, err
	}
	txns, changes, err := read(MaxTransactions, MaxRowChanges)
	if err != nil || txns < 2 || changes < 2 {
		t.Fatalf("read %s: %d transactions, %d row changes, %v", path, txns, changes, err)
	}
	if _, _, err := read(txns, changes); err != nil {
		t.Errorf("at its bounds (%d, %d): %v; want it read", txns, changes, err)
	}
	if _, _, err := read(txns-1, changes); !errors.Is(err, ErrLimit) {
		t.Errorf("one transaction past the bound: %v; want ErrLimit", err)
	}
	if _, _, err := read(txns, changes-1); !errors.Is(err, ErrLimit) {
		t.Errorf("one row change past the bound: %v; want ErrLimit", err)
	}
	tx, ch := scanMode{allowGaps: true}.limits()
	stx, sch := scanMode{streamed: true}.limits()
	if tx != MaxTransactions || ch != MaxRowChanges || stx != MaxStreamedTransactions || sch != MaxStreamedRowChanges {
		t.Errorf("limits: a History's %d, %d, a stream's %d, %d", tx, ch, stx, sch)
	}
	if MaxStreamedTransactions <= MaxTransactions || MaxStreamedRowChanges <= MaxRowChanges {
		t.Error("a stream's bounds are not above a History's")
	}
}
