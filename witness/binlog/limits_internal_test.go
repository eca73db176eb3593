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
