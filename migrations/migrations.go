// Package migrations holds the DDL of the system under test as embedded
// NNNN_name.up.sql files and applies them, in order, to a database.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/migrations/sqlsplit"
)

//go:embed *.sql
var files embed.FS

// Source is the package's source, its migrations and its Go files, for
// the digest of the system under test's code (runner/sut.ReferenceSource).
//
//go:embed *.sql *.go
var Source embed.FS

// Migration is one parsed file.
type Migration struct {
	Version    int
	Name       string
	File       string
	Statements []string
}

// ErrBadName is returned for a .sql file whose name is not NNNN_name.up.sql.
var ErrBadName = errors.New("migration file name must be NNNN_name.up.sql")

var nameRE = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.up\.sql$`)

// All returns the embedded migrations sorted by version.
func All() ([]Migration, error) { return Parse(files) }

// Parse reads every *.sql file at the root of fsys strictly: a bad name, a
// duplicate version, a gap in the numbering or an empty file is an error.
func Parse(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		m := nameRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), ErrBadName)
		}
		v, _ := strconv.Atoi(m[1])
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		stmts := SplitStatements(string(body))
		if len(stmts) == 0 {
			return nil, fmt.Errorf("migration %s has no statements", e.Name())
		}
		out = append(out, Migration{Version: v, Name: m[2], File: e.Name(), Statements: stmts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: version %d out of sequence, want %04d", m.File, m.Version, i+1)
		}
	}
	return out, nil
}

// SplitStatements drops "--" comment lines and splits on a ";" that ends a
// line (see sqlsplit.Split, which the verifier shares).
func SplitStatements(body string) []string { return sqlsplit.Split(body) }

// Apply applies the embedded migrations to the database db is connected to.
// See ApplyList.
func Apply(ctx context.Context, db *sql.DB) (applied int, err error) {
	ms, err := All()
	if err != nil {
		return 0, err
	}
	return ApplyList(ctx, db, ms)
}

// ApplyList records each applied version in schema_migrations and skips the
// versions already recorded, so a second apply is a no-op. MySQL commits DDL
// implicitly, so a migration that fails half way cannot be rolled back: the
// error names the file and statement, and the caller (a scratch database)
// drops the database instead of using a half-applied schema. A database that
// has tables but no schema_migrations is refused rather than guessed at.
func ApplyList(ctx context.Context, db *sql.DB, ms []Migration) (applied int, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()

	var hasTable int
	if err := conn.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'schema_migrations'`,
	).Scan(&hasTable); err != nil {
		return 0, fmt.Errorf("migrate: inspect schema: %w", err)
	}
	if hasTable == 0 {
		var n int
		if err := conn.QueryRowContext(ctx,
			`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`,
		).Scan(&n); err != nil {
			return 0, fmt.Errorf("migrate: inspect schema: %w", err)
		}
		if n > 0 {
			return 0, fmt.Errorf("migrate: database has %d tables but no schema_migrations: not ours, refusing", n)
		}
		if _, err := conn.ExecContext(ctx, `CREATE TABLE schema_migrations (
  version    INT          NOT NULL PRIMARY KEY,
  name       VARCHAR(255) NOT NULL,
  applied_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
)`); err != nil {
			return 0, fmt.Errorf("migrate: create schema_migrations: %w", err)
		}
	}

	done := map[int]bool{}
	rows, err := conn.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return 0, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return 0, fmt.Errorf("migrate: read schema_migrations: %w", err)
		}
		done[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}

	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		for i, stmt := range m.Statements {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return applied, fmt.Errorf("migrate %s statement %d: %w", m.File, i+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, m.Version, m.Name); err != nil {
			return applied, fmt.Errorf("migrate %s: record version: %w", m.File, err)
		}
		applied++
	}
	return applied, nil
}
