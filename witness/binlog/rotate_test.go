package binlog_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/internal/testserver"
)

// TestKeepFilesUnder: on a server whose max_binlog_size is larger than the
// limit, KeepFilesUnder closes the current file once it is past the limit
// and not before; the files it leaves are streamed and read back as one
// sequence holding every transaction written.
func TestKeepFilesUnder(t *testing.T) {
	f := setup(t, testserver.Options{})
	db := f.schema(t, "ofa_t_rot")
	const limit = 64 << 10
	from := f.position(t)
	ctx, cancel := context.WithCancel(t.Context())
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := binlog.KeepFilesUnder(ctx, f.db, limit, 10*time.Millisecond)
		done <- result{n, err}
	}()
	file := func() string { return f.position(t).File }
	// Under the limit: no rotation, however long it looks.
	f.exec(t, db, "INSERT INTO stock (sku, quantity) VALUES ('under', 1)")
	time.Sleep(200 * time.Millisecond)
	if got := file(); got != from.File {
		t.Fatalf("the file changed from %s to %s with %d bytes written", from.File, got, f.position(t).Pos)
	}
	// Past it, three times: each time a new file.
	rows := 0
	for round := range 3 {
		before := file()
		for f.position(t).Pos < limit && f.position(t).File == before {
			for range 20 {
				rows++
				f.exec(t, db, "INSERT INTO stock (sku, quantity) VALUES (?, ?)", strings.Repeat("x", 40)+strconv.Itoa(rows), rows)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for file() == before {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %s is %d bytes, past %d, and was not closed", round, before, f.position(t).Pos, limit)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cancel()
	res := <-done
	if res.err != nil || res.n < 3 {
		t.Fatalf("KeepFilesUnder = %d, %v; want at least 3 files closed, no error", res.n, res.err)
	}
	got, err := binlog.Stream(t.Context(), binlog.StreamConfig{DSN: f.srv.DSN}, from, binlog.Position{}, t.TempDir())
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(got) < 4 {
		t.Fatalf("%d files streamed; want the first and three more", len(got))
	}
	var paths []string
	for _, c := range got {
		paths = append(paths, c.Path)
		if c.Size > 2*limit {
			t.Errorf("%s: %d bytes, more than twice the limit", c.Name, c.Size)
		}
	}
	h, err := binlog.ReadAll(paths)
	if err != nil {
		t.Fatalf("ReadAll of the rotated files: %v", err)
	}
	inserted := 0
	for _, tx := range h.Transactions {
		if tx, ok := tx.ForSchema("ofa_t_rot"); ok {
			for _, ch := range tx.Changes {
				if ch.Table == "stock" && ch.Op == binlog.Insert {
					inserted++
				}
			}
		}
	}
	if inserted != rows+1 {
		t.Errorf("%d inserts read back; want %d", inserted, rows+1)
	}
}

// TestKeepFilesUnderSmallFiles: a server that rotates in time itself is
// left alone, and a stopped context ends the watch without an error.
func TestKeepFilesUnderSmallFiles(t *testing.T) {
	f := setup(t, testserver.Options{Args: []string{"--max-binlog-size=4096"}})
	n, err := binlog.KeepFilesUnder(t.Context(), f.db, 64<<10, time.Millisecond)
	if n != 0 || err != nil {
		t.Errorf("KeepFilesUnder with max_binlog_size 4096 = %d, %v; want 0, nil at once", n, err)
	}
}
