package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	_ "github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/migrations"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestParse(t *testing.T) {
	ok := "CREATE TABLE a (id INT);\n"
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		want    []int  // versions, when no error is expected
		wantErr string // substring of the error
		badName bool   // the error wraps ErrBadName
	}{
		{
			name: "sorted, non-sql files ignored",
			fsys: fstest.MapFS{"0002_b.up.sql": file(ok), "0001_a.up.sql": file(ok), "README.md": file("x")},
			want: []int{1, 2},
		},
		{name: "no number", fsys: fstest.MapFS{"orders.up.sql": file(ok)}, badName: true},
		{name: "three digits", fsys: fstest.MapFS{"001_a.up.sql": file(ok)}, badName: true},
		{name: "no .up", fsys: fstest.MapFS{"0001_a.sql": file(ok)}, badName: true},
		{name: "down migration", fsys: fstest.MapFS{"0001_a.down.sql": file(ok)}, badName: true},
		{name: "upper case", fsys: fstest.MapFS{"0001_Orders.up.sql": file(ok)}, badName: true},
		{name: "dash", fsys: fstest.MapFS{"0001_a-b.up.sql": file(ok)}, badName: true},
		{
			name:    "duplicate version",
			fsys:    fstest.MapFS{"0001_a.up.sql": file(ok), "0001_b.up.sql": file(ok)},
			wantErr: "share version 1",
		},
		{
			name:    "gap",
			fsys:    fstest.MapFS{"0001_a.up.sql": file(ok), "0003_c.up.sql": file(ok)},
			wantErr: "0003_c.up.sql: version 3 out of sequence",
		},
		{
			name:    "does not start at 1",
			fsys:    fstest.MapFS{"0002_b.up.sql": file(ok)},
			wantErr: "out of sequence",
		},
		{
			name:    "only comments",
			fsys:    fstest.MapFS{"0001_a.up.sql": file("-- nothing here\n\n")},
			wantErr: "0001_a.up.sql has no statements",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := migrations.Parse(tt.fsys)
			switch {
			case tt.badName:
				if !errors.Is(err, migrations.ErrBadName) {
					t.Fatalf("Parse = %v; want ErrBadName", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %v; want an error containing %q", err, tt.wantErr)
				}
			default:
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				var got []int
				for _, m := range ms {
					got = append(got, m.Version)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("versions = %v; want %v", got, tt.want)
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Fatalf("versions = %v; want %v", got, tt.want)
					}
				}
			}
		})
	}
}

func TestEmbedded(t *testing.T) {
	ms, err := migrations.All()
	if err != nil {
		t.Fatalf("All: %v", err)
	}
	if len(ms) < 4 {
		t.Fatalf("All() = %d migrations; want at least 4", len(ms))
	}
	for i, m := range ms {
		if m.Version != i+1 || m.Name == "" || len(m.Statements) == 0 {
			t.Errorf("migration %d = %+v", i, m)
		}
		for _, s := range m.Statements {
			if strings.HasSuffix(s, ";") || strings.HasPrefix(strings.TrimSpace(s), "--") {
				t.Errorf("%s: statement not cleaned: %q", m.File, s)
			}
		}
	}
}

func TestSplitStatements(t *testing.T) {
	body := "-- header comment\nCREATE TABLE a (\n  id INT -- trailing is kept\n);\n\n-- between\nCREATE INDEX i ON a (id);\nSELECT 1"
	got := migrations.SplitStatements(body)
	want := []string{"CREATE TABLE a (\n  id INT -- trailing is kept\n)", "CREATE INDEX i ON a (id)", "SELECT 1"}
	if len(got) != len(want) {
		t.Fatalf("SplitStatements = %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("statement %d = %q; want %q", i, got[i], want[i])
		}
	}
}

// emptyDB creates an empty database of its own (no marker, not a scratch
// database yet) and drops it in t.Cleanup.
func emptyDB(t *testing.T) *sql.DB {
	t.Helper()
	s := infratest.Server(t)
	name := "ofa_t_" + infratest.RandomID() + "_migrations"
	if _, err := s.DB().ExecContext(t.Context(), "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	db, err := sql.Open("mysql", s.DSNFor(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		if _, err := s.DB().ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return db
}

func tables(t *testing.T, db *sql.DB) map[string]bool {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[n] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestApplyEmptyThenAgain(t *testing.T) {
	db := emptyDB(t)
	ms, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	n, err := migrations.Apply(t.Context(), db)
	if err != nil {
		t.Fatalf("Apply(empty): %v", err)
	}
	if n != len(ms) {
		t.Fatalf("Apply(empty) applied %d; want %d", n, len(ms))
	}
	got := tables(t, db)
	for _, want := range []string{"schema_migrations", "ofa_marker", "stock", "orders", "order_lines", "idempotency_records", "outbox", "inbox", "notification"} {
		if !got[want] {
			t.Errorf("table %s missing after Apply; have %v", want, got)
		}
	}
	var recorded int
	if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM schema_migrations`).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if recorded != len(ms) {
		t.Errorf("schema_migrations has %d rows; want %d", recorded, len(ms))
	}

	n, err = migrations.Apply(t.Context(), db)
	if err != nil || n != 0 {
		t.Fatalf("second Apply = %d, %v; want 0, nil", n, err)
	}
}

func TestApplyScratchIsNoop(t *testing.T) {
	sc := infratest.Scratch(t) // already migrated by CreateScratch
	n, err := migrations.Apply(t.Context(), sc.DB)
	if err != nil || n != 0 {
		t.Fatalf("Apply(scratch) = %d, %v; want 0, nil", n, err)
	}
}

func TestApplyRefusesForeignTables(t *testing.T) {
	db := emptyDB(t)
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE customers (id INT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	n, err := migrations.Apply(t.Context(), db)
	if err == nil || !strings.Contains(err.Error(), "not ours") {
		t.Fatalf("Apply(foreign) = %d, %v; want a refusal", n, err)
	}
	got := tables(t, db)
	if len(got) != 1 || !got["customers"] {
		t.Errorf("tables after refusal = %v; want only customers", got)
	}
}

func TestApplyFailingMigrationNamesFileAndStatement(t *testing.T) {
	db := emptyDB(t)
	ms, err := migrations.Parse(fstest.MapFS{
		"0001_first.up.sql":  file("CREATE TABLE first_t (id INT PRIMARY KEY);\n"),
		"0002_broken.up.sql": file("CREATE TABLE second_t (id INT PRIMARY KEY);\nCREATE TABLE third_t (id INT PRIMARY KEY, bogus NOSUCHTYPE);\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := migrations.ApplyList(t.Context(), db, ms)
	if err == nil {
		t.Fatal("ApplyList(broken) succeeded")
	}
	if !strings.Contains(err.Error(), "0002_broken.up.sql statement 2") {
		t.Errorf("error %q does not name the file and statement", err)
	}
	if n != 1 {
		t.Errorf("applied = %d; want 1", n)
	}
	var versions []int
	rows, err := db.QueryContext(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if len(versions) != 1 || versions[0] != 1 {
		t.Errorf("recorded versions = %v; want [1]: a failed migration must not be recorded", versions)
	}
	// DDL commits implicitly, so second_t exists: applying again must fail
	// loudly, not report the half-applied schema as migrated.
	if n, err := migrations.ApplyList(t.Context(), db, ms); err == nil || !strings.Contains(err.Error(), "0002_broken.up.sql") {
		t.Errorf("ApplyList again = %d, %v; want an error naming 0002_broken.up.sql", n, err)
	}
}
