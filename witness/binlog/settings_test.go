package binlog_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/internal/testserver"
)

func TestServerWithoutBinlog(t *testing.T) {
	f := setup(t, testserver.Options{NoBinlog: true})
	ctx := t.Context()
	if _, err := binlog.Check(ctx, f.db); !errors.Is(err, binlog.ErrServer) || !strings.Contains(err.Error(), "log_bin is OFF") {
		t.Errorf("Check = %v; want ErrServer naming log_bin", err)
	}
	if _, err := binlog.CurrentPosition(ctx, f.db); !errors.Is(err, binlog.ErrServer) {
		t.Errorf("CurrentPosition = %v; want ErrServer", err)
	}
	if _, err := binlog.CopyFiles(ctx, f.db, "", binlog.Position{File: "binlog.000001"}, binlog.Position{}, t.TempDir()); err == nil {
		t.Error("CopyFiles succeeded without a binlog")
	}
	_, err := binlog.Stream(ctx, binlog.StreamConfig{DSN: f.srv.DSN}, binlog.Position{File: "binlog.000001"}, binlog.Position{}, t.TempDir())
	if !errors.Is(err, binlog.ErrServer) || !strings.Contains(err.Error(), "log_bin is OFF") {
		t.Errorf("Stream = %v; want ErrServer naming log_bin", err)
	}
}

// TestSettingsTheReaderNeeds changes the server's binlog settings the way
// a misconfigured server would have them and checks that Check names them
// and that the reader refuses what they produce instead of guessing.
func TestSettingsTheReaderNeeds(t *testing.T) {
	f := setup(t, testserver.Options{})
	f.schema(t, "ofa_t_s")
	ctx := t.Context()

	f.exec(t, f.db, "SET GLOBAL binlog_format = 'STATEMENT'")
	f.exec(t, f.db, "SET GLOBAL binlog_row_image = 'MINIMAL'")
	f.exec(t, f.db, "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
	_, err := binlog.Check(ctx, f.db)
	for _, want := range []string{"binlog_format is STATEMENT", "binlog_row_image is MINIMAL", "binlog_row_metadata is MINIMAL"} {
		if !errors.Is(err, binlog.ErrServer) || !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v; want ErrServer naming %q", err, want)
		}
	}
	f.exec(t, f.db, "SET GLOBAL binlog_format = 'ROW'")
	f.exec(t, f.db, "SET GLOBAL binlog_row_image = 'FULL'")

	// Each step writes into files of its own (CopyFiles flushes), so that
	// each read sees only that step's damage.
	step := func(name string, want error, write func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			from := f.position(t)
			write(t)
			h, err := binlog.ReadAll(f.copyFrom(t, from))
			if want == nil {
				if err != nil {
					t.Fatalf("ReadAll: %v", err)
				}
				return
			}
			if !errors.Is(err, want) {
				t.Fatalf("ReadAll = %v (%d transactions); want %v", err, len(h.Transactions), want)
			}
			t.Logf("%v", err)
		})
	}
	step("metadata without column names", binlog.ErrNoColumnNames, func(t *testing.T) {
		f.exec(t, f.srv.DB(t, "ofa_t_s"), "INSERT INTO stock (sku, quantity) VALUES ('m', 1)")
	})
	f.exec(t, f.db, "SET GLOBAL binlog_row_metadata = 'FULL'")
	if _, err := binlog.Check(ctx, f.db); err != nil {
		t.Fatalf("Check after restoring the settings: %v", err)
	}
	step("session with a minimal row image", binlog.ErrPartialImage, func(t *testing.T) {
		conn, err := f.srv.DB(t, "ofa_t_s").Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		f.exec(t, conn, "SET SESSION binlog_row_image = 'MINIMAL'")
		f.exec(t, conn, "UPDATE stock SET quantity = 2 WHERE sku = 'm'")
	})
	step("a skipped GTID sequence number", binlog.ErrGTIDGap, func(t *testing.T) {
		conn, err := f.srv.DB(t, "ofa_t_s").Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		f.exec(t, conn, "SET SESSION gtid_seq_no = 1000")
		f.exec(t, conn, "UPDATE stock SET quantity = 3 WHERE sku = 'm'")
	})
	t.Run("statement-based session", func(t *testing.T) {
		from := f.position(t)
		conn, err := f.srv.DB(t, "ofa_t_s").Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		f.exec(t, conn, "SET SESSION binlog_format = 'STATEMENT'")
		f.exec(t, conn, "UPDATE stock SET quantity = 4 WHERE sku = 'm'")
		h, err := binlog.ReadAll(f.copyFrom(t, from))
		if err != nil {
			t.Fatalf("ReadAll: %v", err)
		}
		// The reader keeps the statement as text and no row change: the
		// verifier sees a write it cannot check row by row.
		tx := h.Transactions[len(h.Transactions)-1]
		if len(tx.Changes) != 0 || len(tx.Statements) != 1 || !strings.HasPrefix(tx.Statements[0].SQL, "UPDATE stock") {
			t.Errorf("statement-logged transaction %+v; want one statement, no changes", tx)
		}
	})
	// A verifier that reads a gap as a hole (the black-box rule holes)
	// reads ahead of a skipped number, and still refuses a number that
	// goes back.
	t.Run("gaps read, not refused", func(t *testing.T) {
		conn, err := f.srv.DB(t, "ofa_t_s").Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		from := f.position(t)
		f.exec(t, conn, "UPDATE stock SET quantity = 5 WHERE sku = 'm'")
		f.exec(t, conn, "SET SESSION gtid_seq_no = 2000")
		f.exec(t, conn, "UPDATE stock SET quantity = 6 WHERE sku = 'm'")
		ahead := f.copyFrom(t, from)
		if _, err := binlog.ReadAll(ahead); !errors.Is(err, binlog.ErrGTIDGap) {
			t.Fatalf("ReadAll = %v; want ErrGTIDGap", err)
		}
		h, err := binlog.ReadAllInputsAllowingGaps(open(t, ahead))
		if err != nil {
			t.Fatalf("ReadAllInputsAllowingGaps: %v", err)
		}
		n := len(h.Transactions)
		if n < 2 || h.Transactions[n-1].GTID.Seq != 2000 || h.Transactions[n-2].GTID.Seq >= 1999 {
			t.Fatalf("transactions %v; want the last at sequence 2000 after one below 1999", h.Transactions)
		}
		// Streamed, the transactions are the same, copied out of the
		// Changes and images the scan reuses once fn returns.
		var streamed []binlog.Transaction
		if _, err := binlog.ScanInputsAllowingGaps(open(t, ahead), func(tx binlog.Transaction) error {
			streamed = append(streamed, ownCopy(tx))
			return nil
		}); err != nil {
			t.Fatalf("ScanInputsAllowingGaps: %v", err)
		}
		if !reflect.DeepEqual(streamed, h.Transactions) {
			t.Errorf("streamed transactions\n%+v\nwant\n%+v", streamed, h.Transactions)
		}

		from = f.position(t)
		f.exec(t, conn, "UPDATE stock SET quantity = 7 WHERE sku = 'm'")
		f.exec(t, conn, "SET SESSION gtid_seq_no = 1500")
		f.exec(t, conn, "UPDATE stock SET quantity = 8 WHERE sku = 'm'")
		if _, err := binlog.ReadAllInputsAllowingGaps(open(t, f.copyFrom(t, from))); !errors.Is(err, binlog.ErrGTIDGap) || !strings.Contains(err.Error(), "not after it") {
			t.Fatalf("a sequence number going back: %v; want ErrGTIDGap, not after it", err)
		}
	})
}

// open opens paths as the reader's inputs, closed at the test's end.
func open(t *testing.T, paths []string) []binlog.Input {
	t.Helper()
	var in []binlog.Input
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		in = append(in, binlog.Input{Name: filepath.Base(p), R: f})
	}
	return in
}
