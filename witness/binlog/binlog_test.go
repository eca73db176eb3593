package binlog_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/migrations"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/internal/testserver"
)

// fixture is one private server with the helpers the tests share.
type fixture struct {
	srv *testserver.Server
	db  *sql.DB
}

func setup(t testing.TB, opts testserver.Options) *fixture {
	t.Helper()
	srv := testserver.Start(t, opts)
	return &fixture{srv: srv, db: srv.DB(t, "")}
}

// schema creates a database with the project's real DDL (migrations/) and
// returns a pool connected to it.
func (f *fixture) schema(t testing.TB, name string) *sql.DB {
	t.Helper()
	f.exec(t, f.db, "CREATE DATABASE "+name)
	db := f.srv.DB(t, name)
	if _, err := migrations.Apply(t.Context(), db); err != nil {
		t.Fatalf("migrate %s: %v", name, err)
	}
	return db
}

type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

func (f *fixture) exec(t testing.TB, db execer, q string, args ...any) int64 {
	t.Helper()
	res, err := db.ExecContext(t.Context(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	n, _ := res.RowsAffected()
	return n
}

func (f *fixture) position(t testing.TB) binlog.Position {
	t.Helper()
	p, err := binlog.CurrentPosition(t.Context(), f.db)
	if err != nil {
		t.Fatalf("CurrentPosition: %v", err)
	}
	return p
}

// copyFrom copies the closed files from from's file to now into a new
// directory and returns their paths.
func (f *fixture) copyFrom(t testing.TB, from binlog.Position) []string {
	t.Helper()
	dst := t.TempDir()
	got, err := binlog.CopyFiles(t.Context(), f.db, "", from, binlog.Position{}, dst)
	if err != nil {
		t.Fatalf("CopyFiles: %v", err)
	}
	paths := make([]string, len(got))
	for i, c := range got {
		paths[i] = c.Path
	}
	return paths
}

// anyTime in a wanted row image accepts any non-zero time.Time: the
// column is filled by the server's clock.
var anyTime = struct{ anyTime bool }{true}

func checkImage(t *testing.T, label string, got, want map[string]binlog.Value) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: columns %v; want %v", label, keys(got), keys(want))
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: column %s missing", label, k)
		case w == anyTime:
			if tm, ok := g.(time.Time); !ok || tm.IsZero() {
				t.Errorf("%s.%s = %#v; want a time", label, k, g)
			}
		case !reflect.DeepEqual(g, w):
			t.Errorf("%s.%s = %#v (%T); want %#v (%T)", label, k, g, g, w, w)
		}
	}
}

func keys(m map[string]binlog.Value) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type change struct {
	table  string
	op     binlog.Op
	before map[string]binlog.Value
	after  map[string]binlog.Value
}

func checkTx(t *testing.T, label string, got binlog.Transaction, want []change) {
	t.Helper()
	if len(got.Changes) != len(want) {
		t.Fatalf("%s (%s): %d changes; want %d: %+v", label, got.GTID, len(got.Changes), len(want), got.Changes)
	}
	for i, w := range want {
		c := got.Changes[i]
		l := fmt.Sprintf("%s change %d %s.%s", label, i, c.Table, c.Op)
		if c.Table != w.table || c.Op != w.op {
			t.Errorf("%s: want %s %s", l, w.table, w.op)
			continue
		}
		if (c.Before == nil) != (w.before == nil) || (c.After == nil) != (w.after == nil) {
			t.Errorf("%s: images before=%v after=%v; want before=%v after=%v", l, c.Before != nil, c.After != nil, w.before != nil, w.after != nil)
		}
		if w.before != nil {
			checkImage(t, l+" before", c.Before, w.before)
		}
		if w.after != nil {
			checkImage(t, l+" after", c.After, w.after)
		}
	}
}

// with returns a copy of m with some columns changed.
func with(m map[string]binlog.Value, kv ...any) map[string]binlog.Value {
	out := make(map[string]binlog.Value, len(m))
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// runChain writes what one scenario's chain writes, plus the things that
// must leave no trace: an UPDATE matching no row (alone and in an explicit
// transaction) and a rolled-back order. It flushes the binlog twice on the
// way so that the history spans several files.
func runChain(t *testing.T, f *fixture, db *sql.DB) {
	t.Helper()
	ctx := t.Context()
	f.exec(t, db, "INSERT INTO stock (sku, quantity, price_cents) VALUES ('sku-1', 10, 250), ('sku-2', 5, 100)")

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.exec(t, tx, "UPDATE stock SET quantity = quantity - 2 WHERE sku = 'sku-1' AND quantity >= 2")
	f.exec(t, tx, "INSERT INTO orders (id, principal, sku, quantity, amount_cents) VALUES (1, 'alice', 'sku-1', 2, 500)")
	f.exec(t, tx, "INSERT INTO order_lines (id, order_id, sku, quantity, price_cents) VALUES (1, 1, 'sku-1', 2, 250)")
	f.exec(t, tx, `INSERT INTO idempotency_records (id, principal, idem_key, request_hash, status_code, response_body, order_id)
		VALUES (1, 'alice', 'k-1', REPEAT('a', 64), 201, '{"orderId":1}', 1)`)
	f.exec(t, tx, `INSERT INTO outbox (id, event_id, aggregate_id, aggregate_version, payload)
		VALUES (1, 'e-1', 1, 1, ?)`, `{"orderId":1,"sku":"sku-1","quantity":2}`)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	f.exec(t, f.db, "FLUSH BINARY LOGS")

	if n := f.exec(t, db, "UPDATE outbox SET state = 'SENT' WHERE event_id = 'e-1' AND claim_version = 7 AND claim_id = 'stale'"); n != 0 {
		t.Fatalf("stale mark updated %d rows", n)
	}
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.exec(t, tx, "UPDATE outbox SET state = 'SENT' WHERE event_id = 'e-1' AND claim_id = 'stale'")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.exec(t, tx, "INSERT INTO orders (id, principal, sku, quantity, amount_cents) VALUES (2, 'bob', 'sku-1', 1, 250)")
	f.exec(t, tx, "INSERT INTO outbox (id, event_id, aggregate_id, aggregate_version, payload) VALUES (2, 'e-2', 2, 1, '{}')")
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	f.exec(t, db, `UPDATE outbox SET state = 'CLAIMED', claim_version = claim_version + 1, claim_id = 'c-1',
		lease_until = '2030-01-02 03:04:05.678901' WHERE event_id = 'e-1' AND state = 'PENDING'`)
	f.exec(t, f.db, "FLUSH BINARY LOGS")
	f.exec(t, db, `UPDATE outbox SET state = 'SENT', sent_at = '2030-01-02 03:04:06'
		WHERE event_id = 'e-1' AND claim_version = 1 AND claim_id = 'c-1'`)
	f.exec(t, f.db, "INSERT INTO ofa_t_other.stock (sku, quantity) VALUES ('x', 1)")

	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.exec(t, tx, "INSERT INTO inbox (consumer, event_id, topic, part, msg_offset) VALUES ('notify', 'e-1', 'ofa.t.chain', 0, 0)")
	f.exec(t, tx, "INSERT INTO notification (id, consumer, event_id, order_id, body) VALUES (1, 'notify', 'e-1', 1, 'order 1 placed')")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	f.exec(t, db, "DELETE FROM stock WHERE sku = 'sku-2'")
}

// wantChain is the history runChain must leave, transaction by transaction.
func wantChain() [][]change {
	stock1 := map[string]binlog.Value{"sku": "sku-1", "quantity": int64(10), "price_cents": int64(250)}
	stock2 := map[string]binlog.Value{"sku": "sku-2", "quantity": int64(5), "price_cents": int64(100)}
	outbox := map[string]binlog.Value{"id": int64(1), "event_id": "e-1", "aggregate_id": int64(1),
		"aggregate_version": int64(1), "payload": `{"orderId":1,"sku":"sku-1","quantity":2}`, "state": "PENDING",
		"claim_version": int64(0), "claim_id": nil, "lease_until": nil, "created_at": anyTime, "sent_at": nil,
		"changed_at": anyTime}
	claimed := with(outbox, "state", "CLAIMED", "claim_version", int64(1), "claim_id", "c-1",
		"lease_until", time.Date(2030, 1, 2, 3, 4, 5, 678901000, time.UTC))
	return [][]change{
		{{table: "stock", op: binlog.Insert, after: stock1}, {table: "stock", op: binlog.Insert, after: stock2}},
		{
			{table: "stock", op: binlog.Update, before: stock1, after: with(stock1, "quantity", int64(8))},
			{table: "orders", op: binlog.Insert, after: map[string]binlog.Value{"id": int64(1), "principal": "alice",
				"sku": "sku-1", "quantity": int64(2), "amount_cents": int64(500), "status": "PLACED", "created_at": anyTime}},
			{table: "order_lines", op: binlog.Insert, after: map[string]binlog.Value{"id": int64(1), "order_id": int64(1),
				"sku": "sku-1", "quantity": int64(2), "price_cents": int64(250)}},
			{table: "idempotency_records", op: binlog.Insert, after: map[string]binlog.Value{"id": int64(1),
				"principal": "alice", "idem_key": "k-1", "request_hash": strings.Repeat("a", 64), "status_code": int64(201),
				"response_body": `{"orderId":1}`, "order_id": int64(1), "created_at": anyTime}},
			{table: "outbox", op: binlog.Insert, after: outbox},
		},
		{{table: "outbox", op: binlog.Update, before: outbox, after: claimed}},
		{{table: "outbox", op: binlog.Update, before: claimed,
			after: with(claimed, "state", "SENT", "sent_at", time.Date(2030, 1, 2, 3, 4, 6, 0, time.UTC))}},
		{
			{table: "inbox", op: binlog.Insert, after: map[string]binlog.Value{"consumer": "notify", "event_id": "e-1",
				"topic": "ofa.t.chain", "part": int64(0), "msg_offset": int64(0), "received_at": anyTime}},
			{table: "notification", op: binlog.Insert, after: map[string]binlog.Value{"id": int64(1), "consumer": "notify",
				"event_id": "e-1", "order_id": int64(1), "body": "order 1 placed", "created_at": anyTime}},
		},
		{{table: "stock", op: binlog.Delete, before: stock2}},
	}
}

func TestHistory(t *testing.T) {
	f := setup(t, testserver.Options{})
	if _, err := binlog.Check(t.Context(), f.db); err != nil {
		t.Fatalf("Check: %v", err)
	}
	chain := f.schema(t, "ofa_t_chain")
	f.schema(t, "ofa_t_other")
	from := f.position(t)
	runChain(t, f, chain)
	to := f.position(t)
	files := f.copyFrom(t, from)
	if len(files) != 3 {
		t.Fatalf("copied %d files; want 3 (two flushes inside the run, one by CopyFiles)", len(files))
	}

	h, err := binlog.ReadAll(files)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	start, err := binlog.ParseGTID(from.GTID)
	if err != nil {
		t.Fatal(err)
	}
	var run []binlog.Transaction
	for _, tx := range h.Transactions {
		if tx.After(from) {
			run = append(run, tx)
		}
	}
	// Seven commits: the chain's six and one in the other database. The
	// UPDATEs that matched nothing and the rolled-back order left nothing.
	if len(run) != 7 {
		t.Fatalf("%d transactions after %s; want 7: %+v", len(run), from, run)
	}
	for i, tx := range run {
		if want := start.Seq + uint64(i) + 1; tx.GTID.Seq != want || tx.GTID.Server != testserver.ServerID {
			t.Errorf("transaction %d GTID %s; want 0-%d-%d", i, tx.GTID, testserver.ServerID, want)
		}
		if tx.XID == 0 || tx.EndPos <= tx.Pos || len(tx.Statements) != 0 {
			t.Errorf("transaction %s: xid %d, %d..%d, statements %v", tx.GTID, tx.XID, tx.Pos, tx.EndPos, tx.Statements)
		}
	}
	if last := run[len(run)-1].GTID.String(); last != to.GTID {
		t.Errorf("last GTID %s; CurrentPosition said %s", last, to.GTID)
	}

	var mine []binlog.Transaction
	for tx, err := range binlog.InSchema(binlog.Transactions(files), "ofa_t_chain") {
		if err != nil {
			t.Fatalf("Transactions: %v", err)
		}
		if tx.After(from) {
			mine = append(mine, tx)
		}
	}
	want := wantChain()
	if len(mine) != len(want) {
		t.Fatalf("%d transactions in ofa_t_chain; want %d", len(mine), len(want))
	}
	for i, w := range want {
		checkTx(t, fmt.Sprintf("transaction %d", i), mine[i], w)
	}
	if q := mine[2].Changes[0].Query; !strings.Contains(q, "claim_id = 'c-1'") {
		t.Errorf("claim change query %q; want the UPDATE statement", q)
	}
	if files := h.Files; files[0].Closed != "rotate" || files[0].Next != filepath.Base(files[1].Name) || files[1].First.IsZero() {
		t.Errorf("file infos: %+v", files)
	}

	t.Run("mariadb-binlog reads the copies", func(t *testing.T) {
		out := mariadbBinlog(t, files...)
		for _, s := range []string{"### UPDATE `ofa_t_chain`.`outbox`", "GTID " + to.GTID, "### DELETE FROM `ofa_t_chain`.`stock`"} {
			if !strings.Contains(out, s) {
				t.Errorf("mariadb-binlog output lacks %q", s)
			}
		}
	})
	t.Run("damaged files", func(t *testing.T) { testDamaged(t, files, run) })
	t.Run("stream", func(t *testing.T) { testStream(t, f, from, files) })
	t.Run("stream up to a position", func(t *testing.T) {
		got, err := binlog.Stream(t.Context(), binlog.StreamConfig{DSN: f.srv.DSN}, from, to, t.TempDir())
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if len(got) != 3 || got[2].Name != to.File || got[0].Name != from.File {
			t.Errorf("streamed %+v; want %s..%s", got, from.File, to.File)
		}
	})
}

// mariadbBinlog runs the MariaDB tool on files and returns its decoded
// output; it must exit 0.
func mariadbBinlog(t *testing.T, files ...string) string {
	t.Helper()
	bin, err := exec.LookPath("mariadb-binlog")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and mariadb-binlog is missing: %v", err)
		}
		t.Skipf("mariadb-binlog missing: %v", err)
	}
	args := append([]string{"--no-defaults", "-v", "--base64-output=decode-rows"}, files...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-binlog %v: %v\n%s", files, err, out)
	}
	return string(out)
}

// testDamaged reads damaged copies of good files: every kind of damage
// must be an error the verifier can name, never a shorter history.
func testDamaged(t *testing.T, files []string, run []binlog.Transaction) {
	read := func(t *testing.T, name string) []byte {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// the order transaction, with its five changes, is in the first file
	order := run[1]
	if filepath.Base(files[0]) != order.File {
		t.Fatalf("order transaction in %s, not in the first file", order.File)
	}
	first := read(t, files[0])
	const xidEvent = 31 // header 19 + xid 8 + checksum 4
	cases := []struct {
		name  string
		first []byte // replacement of the first file; nil keeps it
		files []int  // which files to read; nil: all
		want  error
	}{
		{"empty", []byte{}, nil, binlog.ErrTruncated},
		{"cut in the magic", first[:2], nil, binlog.ErrTruncated},
		{"not a binlog", []byte("hello, world, this is text"), nil, binlog.ErrNotBinlog},
		{"cut in an event header", first[:order.Pos+5], nil, binlog.ErrTruncated},
		{"cut in an event body", first[:order.EndPos-3], nil, binlog.ErrTruncated},
		{"cut before the commit", first[:order.EndPos-xidEvent], nil, binlog.ErrTruncated},
		{"cut between transactions", first[:order.EndPos], nil, binlog.ErrUnclosed},
		{"flipped byte", flip(first, int(order.Pos)+80), nil, binlog.ErrCorrupt},
		{"middle file missing", nil, []int{0, 2}, binlog.ErrNotContiguous},
		{"files out of order", nil, []int{1, 0}, binlog.ErrNotContiguous},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			idx := c.files
			if idx == nil {
				idx = []int{0, 1, 2}
			}
			for _, i := range idx {
				b := read(t, files[i])
				if i == 0 && c.first != nil {
					b = c.first
				}
				p := filepath.Join(dir, filepath.Base(files[i]))
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			var got []binlog.Transaction
			_, err := binlog.Scan(paths, func(tx binlog.Transaction) error {
				got = append(got, tx)
				return nil
			})
			var fe *binlog.FileError
			if !errors.Is(err, c.want) || !errors.As(err, &fe) {
				t.Fatalf("Scan = %v; want a *FileError wrapping %v", err, c.want)
			}
			t.Logf("%v", err)
			for _, tx := range got {
				if tx.GTID == order.GTID && len(c.first) > 0 && len(c.first) < int(order.EndPos) {
					t.Errorf("transaction %s passed on although its file is cut at %d", tx.GTID, len(c.first))
				}
			}
		})
	}
}

func flip(b []byte, at int) []byte {
	out := bytes.Clone(b)
	out[at] ^= 0xff
	return out
}

// testStream captures the same range over the replication protocol: the
// files must be the server's files byte for byte, and read by both readers.
func testStream(t *testing.T, f *fixture, from binlog.Position, copied []string) {
	dst := t.TempDir()
	got, err := binlog.Stream(t.Context(), binlog.StreamConfig{DSN: f.srv.DSN}, from, binlog.Position{}, dst)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	// Stream flushed once more, so it holds one file more than the copy.
	if len(got) != len(copied)+1 {
		t.Fatalf("streamed %d files; want %d", len(got), len(copied)+1)
	}
	var paths []string
	for i, c := range got {
		paths = append(paths, c.Path)
		disk, err := os.ReadFile(filepath.Join(filepath.Dir(f.srv.LogBase), c.Name))
		if err != nil {
			t.Fatal(err)
		}
		streamed, err := os.ReadFile(c.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(disk, streamed) {
			t.Errorf("streamed %s differs from the server's file (%d vs %d bytes)", c.Name, len(streamed), len(disk))
		}
		if i < len(copied) && filepath.Base(copied[i]) != c.Name {
			t.Errorf("streamed file %d is %s; copied %s", i, c.Name, copied[i])
		}
	}
	if _, err := binlog.ReadAll(paths); err != nil {
		t.Errorf("ReadAll(streamed): %v", err)
	}
	mariadbBinlog(t, paths...)

	t.Run("missing grants", func(t *testing.T) {
		for _, c := range []struct{ user, grants, want string }{
			{"norepl", "RELOAD, BINLOG MONITOR", "REPLICATION SLAVE"},
			{"noreload", "REPLICATION SLAVE, BINLOG MONITOR", "RELOAD"},
		} {
			f.exec(t, f.db, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", c.user))
			f.exec(t, f.db, fmt.Sprintf("GRANT %s ON *.* TO '%s'@'%%'", c.grants, c.user))
			dsn := strings.Replace(f.srv.DSN, "root@", c.user+":pw@", 1)
			out := t.TempDir()
			_, err := binlog.Stream(t.Context(), binlog.StreamConfig{DSN: dsn}, from, binlog.Position{}, out)
			t.Logf("as %s: %v", c.user, err)
			if !errors.Is(err, binlog.ErrServer) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Stream as %s = %v; want ErrServer naming %s", c.user, err, c.want)
			}
			if left, _ := os.ReadDir(out); len(left) != 0 {
				t.Errorf("Stream as %s left %d files behind", c.user, len(left))
			}
		}
	})
}
