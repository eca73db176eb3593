package checks

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	// modernc.org/sqlite is SQLite transpiled to Go: no cgo, no server, no
	// shared library. A reviewer runs `verify` with nothing installed, and
	// the same binary cross-compiles; the price is speed, which the bulk
	// load below keeps affordable.
	_ "modernc.org/sqlite"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/invariants"
	"github.com/orderflow-audit/orderflow-audit/migrations/sqlsplit"
)

//go:embed ddl/*.sql
var ddlFiles embed.FS

// ErrUnavailable wraps a failure to reach or prepare the MySQL/MariaDB
// server named by Options.MySQLDSN. The CLI maps it to exit code 3.
var ErrUnavailable = errors.New("verification database unavailable")

// TableRows is one table of a replayed end state: the columns of its
// evidence.DigestSpec, in that order, and its rows (int64, string or nil).
type TableRows struct {
	Table   string
	Columns []string
	Rows    [][]any
}

// source returns a tableSource over t's rows.
func (t TableRows) source() tableSource {
	spec := evidence.DigestSpec{Table: t.Table, Columns: t.Columns}
	return tableSource{spec: spec, n: len(t.Rows), row: func(i int, d []any) []any { return append(d, t.Rows[i]...) }}
}

// engine is the SQL database the replayed end state is loaded into.
type engine struct {
	name  string // for the verdict: which engine checked the invariants
	db    *sql.DB
	close func(ctx context.Context) error
}

func ddl(name string) []string {
	b, err := ddlFiles.ReadFile("ddl/" + name)
	if err != nil {
		panic("checks: missing embedded ddl/" + name) // embedded at build time
	}
	return sqlsplit.Split(string(b))
}

// openSQLite opens a private in-memory SQLite database. One connection
// only: every connection to ":memory:" is a database of its own.
func openSQLite(ctx context.Context) (*engine, error) {
	db, err := sql.Open("sqlite", "file::memory:?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)")
	if err != nil {
		return nil, fmt.Errorf("open embedded sqlite: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	var version string
	if err := db.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&version); err != nil {
		db.Close()
		return nil, fmt.Errorf("open embedded sqlite: %w", err)
	}
	return &engine{
		name:  "SQLite " + version + " (embedded, modernc.org/sqlite, in memory)",
		db:    db,
		close: func(context.Context) error { return db.Close() },
	}, nil
}

// openMySQL creates a scratch database ofa_verify_<random> with the
// orderflow-audit marker on the server named by dsn. Closing drops it,
// after checking the marker: it never drops a database it did not create.
// One function on purpose (87 lines): each failure must undo exactly what
// was set up before it (close the server, drop the new database).
func openMySQL(ctx context.Context, dsn, runID string) (*engine, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: parse MySQL DSN: %v", ErrUnavailable, err)
	}
	cfg = cfg.Clone()
	cfg.DBName = ""
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	redacted := redactDSN(cfg)
	fail := func(op string, err error) error {
		msg := err.Error()
		if cfg.Passwd != "" {
			msg = strings.ReplaceAll(msg, cfg.Passwd, "xxxxx")
		}
		return fmt.Errorf("%w: %s on %s: %s", ErrUnavailable, op, redacted, msg)
	}
	server, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fail("open", err)
	}
	server.SetMaxOpenConns(2)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := server.PingContext(pctx); err != nil {
		server.Close()
		return nil, fail("connect", err)
	}
	var version string
	if err := server.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&version); err != nil {
		server.Close()
		return nil, fail("read server version", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "ofa_verify_" + hex.EncodeToString(rnd[:])
	live, err := holdLock(ctx, server, name)
	if err != nil {
		server.Close()
		return nil, fail("lock "+name, err)
	}
	if _, err := server.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		live.Close()
		server.Close()
		return nil, fail("create database "+name, err)
	}
	db, err := markScratch(ctx, cfg, name, runID)
	if err != nil {
		// Created a moment ago by us: drop it without the marker check.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		_, _ = server.ExecContext(dctx, "DROP DATABASE IF EXISTS "+name)
		dcancel()
		live.Close()
		server.Close()
		return nil, fail("prepare scratch database "+name, err)
	}
	return &engine{
		name: flavourOf(version) + " " + version + " (scratch database " + name + ", dropped after)",
		db:   db,
		close: func(ctx context.Context) error {
			db.Close()
			ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
			defer cancel()
			return dropScratch(ctx, server, live, name)
		},
	}, nil
}

// dropScratch drops the scratch database name if it carries our marker,
// then releases its lock and closes the server pool.
func dropScratch(ctx context.Context, server *sql.DB, live *sql.Conn, name string) error {
	defer server.Close()
	defer live.Close() // after the drop: the lock says the database is in use
	var tool string
	err := server.QueryRowContext(ctx, "SELECT tool FROM "+name+".ofa_marker WHERE id = 1").Scan(&tool)
	if err != nil || tool != "orderflow-audit" {
		return fmt.Errorf("drop %s: the orderflow-audit marker is missing, not dropping it", name)
	}
	if _, err := server.ExecContext(ctx, "DROP DATABASE "+name); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// markScratch opens the new scratch database name and marks it as ours.
func markScratch(ctx context.Context, cfg *mysql.Config, name, runID string) (*sql.DB, error) {
	dcfg := cfg.Clone()
	dcfg.DBName = name
	db, err := sql.Open("mysql", dcfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	for _, stmt := range ddl("marker.sql") {
		if _, err = db.ExecContext(ctx, stmt); err != nil {
			break
		}
	}
	if err == nil {
		_, err = db.ExecContext(ctx, `INSERT INTO ofa_marker (id, tool, run_id) VALUES (1, 'orderflow-audit', ?)`, clip(runID, 64))
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// cleanupTimeout bounds dropping the scratch database: a server that
// stopped answering must not hold the verifier.
const cleanupTimeout = 5 * time.Second

// holdLock takes the server lock named after the scratch database on a
// connection of its own, until that connection is closed: while it is
// held, `orderflow-audit clean` knows the database is in use (it checks
// IS_USED_LOCK of the database's name) and leaves it alone.
func holdLock(ctx context.Context, server *sql.DB, name string) (*sql.Conn, error) {
	conn, err := server.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(?, 0)`, name).Scan(&got); err != nil || got.Int64 != 1 {
		conn.Close()
		if err == nil {
			err = fmt.Errorf("lock %s is held by another session", name)
		}
		return nil, err
	}
	return conn, nil
}

func flavourOf(version string) string {
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return "MariaDB"
	}
	return "MySQL"
}

func redactDSN(cfg *mysql.Config) string {
	c := cfg.Clone()
	if c.Passwd != "" {
		c.Passwd = "xxxxx"
	}
	return c.FormatDSN()
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// replayTables lists the tables of ddl/replay.sql, in DigestSpecs order.
func replayTables() []string {
	out := make([]string, len(evidence.DigestSpecs))
	for i, s := range evidence.DigestSpecs {
		out[i] = s.Table
	}
	return out
}

// reset drops and recreates the replay tables (one scenario each).
func (e *engine) reset(ctx context.Context) error {
	for _, t := range replayTables() {
		if _, err := e.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
			return fmt.Errorf("reset replay tables: drop %s: %w", t, err)
		}
	}
	for _, stmt := range ddl("replay.sql") {
		if _, err := e.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("reset replay tables: %w", err)
		}
	}
	return nil
}

// insertChunk bounds the rows of one multi-row INSERT: at most 2,000
// placeholders, far below SQLite's 32,766 and MySQL's 65,535.
const insertChunk = 400

// load bulk-inserts the tables in one transaction, then builds the
// indexes the anti-joins use. Rows are generated chunk by chunk from the
// sources, never all at once.
func (e *engine) load(ctx context.Context, tables []tableSource) (err error) {
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("load replayed state: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	for _, t := range tables {
		if err := insertRows(ctx, tx, t); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("load replayed state: commit: %w", err)
	}
	for _, stmt := range ddl("indexes.sql") {
		if _, err := e.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("load replayed state: index: %w", err)
		}
	}
	for _, t := range tables {
		var n int64
		if err := e.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t.spec.Table).Scan(&n); err != nil {
			return fmt.Errorf("load replayed state: count %s: %w", t.spec.Table, err)
		}
		if n != int64(t.n) {
			return fmt.Errorf("load replayed state: %s holds %d rows after loading %d", t.spec.Table, n, t.n)
		}
	}
	return nil
}

func insertRows(ctx context.Context, tx *sql.Tx, t tableSource) error {
	if t.n == 0 {
		return nil
	}
	cols := t.spec.Columns
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	head := "INSERT INTO " + t.spec.Table + " (" + strings.Join(cols, ", ") + ") VALUES "
	stmts := map[int]*sql.Stmt{}
	defer func() {
		for _, s := range stmts {
			s.Close()
		}
	}()
	args := make([]any, 0, insertChunk*len(cols))
	for start := 0; start < t.n; start += insertChunk {
		end := min(start+insertChunk, t.n)
		n := end - start
		st, ok := stmts[n]
		if !ok {
			q := head + strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
			var err error
			if st, err = tx.PrepareContext(ctx, q); err != nil {
				return fmt.Errorf("load %s: prepare: %w", t.spec.Table, err)
			}
			stmts[n] = st
		}
		args = args[:0]
		for i := start; i < end; i++ {
			args = t.row(i, args)
		}
		if len(args) != n*len(cols) {
			return fmt.Errorf("load %s: %d values for %d rows of %d columns", t.spec.Table, len(args), n, len(cols))
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("load %s: insert: %w", t.spec.Table, err)
		}
	}
	return nil
}

// usedTables returns the sources of the tables some invariant reads (a
// table name as a word of its SQL): only those need loading.
func usedTables(srcs []tableSource, invs []invariants.Invariant) []tableSource {
	var out []tableSource
	for _, s := range srcs {
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(s.spec.Table) + `\b`)
		for _, inv := range invs {
			if re.MatchString(inv.SQL) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// digestSource digests a replayed table as the runner digests the live one
// (evidence.DigestRows over the DigestSpec columns; integers in decimal as
// database/sql renders them into a string, NULL as nil), from the rows
// themselves: reading 875,000 rows back from SQLite would cost a second per
// million events. TestDigestMatchesSQL checks that it equals
// evidence.DigestTable (the runner's procedure) on the same rows loaded into
// SQLite and into MySQL/MariaDB.
func digestSource(t tableSource) evidence.TableDigest {
	if t.n == 0 {
		return evidence.TableDigest{Table: t.spec.Table, SHA256: evidence.DigestRows(nil)}
	}
	// Three arenas instead of a pointer and a string per value: a million
	// events make tables of 125,000 rows.
	cols := len(t.spec.Columns)
	vals := make([]string, t.n*cols)
	ptrs := make([]*string, t.n*cols)
	rows := make([][]*string, t.n)
	var buf []any
	var num []byte
	for i := range t.n {
		buf = t.row(i, buf[:0])
		for j, v := range buf {
			k := i*cols + j
			switch x := v.(type) {
			case nil:
				continue
			case int64:
				num = strconv.AppendInt(num[:0], x, 10)
				vals[k] = string(num)
			case string:
				vals[k] = x
			default:
				vals[k] = fmt.Sprint(x)
			}
			ptrs[k] = &vals[k]
		}
		rows[i] = ptrs[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return evidence.TableDigest{Table: t.spec.Table, Rows: int64(t.n), SHA256: evidence.DigestRows(rows)}
}

// countInvariant runs one invariant on the loaded state.
func (e *engine) countInvariant(ctx context.Context, inv invariants.Invariant) (int64, error) {
	return invariants.CountRows(ctx, e.db, inv)
}
