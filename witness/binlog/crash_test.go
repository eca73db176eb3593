package binlog_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/internal/testserver"
)

// TestScanCrashedServer: a server killed with SIGKILL leaves its binlog
// file in use; started again it writes a new file. The sequence reads
// whole: the crashed file up to its last transaction (Closed "crash"),
// every committed transaction before and after the crash. The crashed file
// alone, or last, is still refused (nothing shows the server came back),
// and a crashed file cut inside a committed transaction breaks the GTID
// sequence the next file continues.
func TestScanCrashedServer(t *testing.T) {
	f := setup(t, testserver.Options{})
	db := f.schema(t, "ofa_t_crash")
	from := f.position(t)
	for i := 1; i <= 3; i++ {
		f.exec(t, db, "INSERT INTO stock (sku, quantity) VALUES (?, ?)", "before-"+string(rune('0'+i)), i)
	}
	f.srv.Crash(t)
	for i := 1; i <= 2; i++ {
		f.exec(t, db, "INSERT INTO stock (sku, quantity) VALUES (?, ?)", "after-"+string(rune('0'+i)), i)
	}
	files := f.copyFrom(t, from)
	if len(files) < 2 {
		t.Fatalf("%d binlog files; want the crashed one and the one after the restart", len(files))
	}
	h, err := binlog.ReadAll(files)
	if err != nil {
		t.Fatalf("ReadAll of a crashed sequence: %v", err)
	}
	if h.Files[0].Closed != "crash" {
		t.Errorf("first file closed %q; want crash", h.Files[0].Closed)
	}
	var skus []string
	for _, tx := range h.Transactions {
		if !tx.After(from) {
			continue
		}
		for _, c := range tx.Changes {
			if c.Table == "stock" {
				skus = append(skus, c.After["sku"].(string))
			}
		}
	}
	if len(skus) != 5 {
		t.Errorf("rows %v; want the 3 inserted before the crash and the 2 after", skus)
	}
	if _, err := binlog.ReadAll(files[:1]); !errors.Is(err, binlog.ErrUnclosed) {
		t.Errorf("the crashed file alone: %v; want ErrUnclosed", err)
	}
	// Cut the crashed file inside its last transaction: the next file's
	// GTID state then names a transaction the cut file lacks.
	cut := filepath.Join(t.TempDir(), filepath.Base(files[0]))
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	last := h.Transactions[0]
	for _, tx := range h.Transactions {
		if filepath.Base(files[0]) == tx.File {
			last = tx
		}
	}
	if err := os.WriteFile(cut, b[:last.EndPos-10], 0o644); err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(filepath.Dir(cut), filepath.Base(files[1]))
	if err := os.Link(files[1], next); err != nil {
		t.Fatal(err)
	}
	if _, err := binlog.ReadAll([]string{cut, next}); !errors.Is(err, binlog.ErrNotContiguous) && !errors.Is(err, binlog.ErrGTIDGap) {
		t.Errorf("a crashed file cut inside a committed transaction: %v; want the sequence refused", err)
	}
}
