package checks

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/checks/model/modeltest"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/invariants"
	"github.com/orderflow-audit/orderflow-audit/migrations/sqlsplit"
)

// invariantFixture is a state where every invariant returns exactly one row.
func invariantFixture() []TableRows {
	s := func(v string) any { return v }
	i := func(v int64) any { return v }
	rows := map[string][][]any{
		"stock": {{s("SKU"), i(5)}},
		"orders": {{i(1), s("SKU"), i(1), s("alice"), i(1250)}, {i(2), s("SKU"), i(1), s("bob"), i(1250)},
			{i(3), s("SKU"), i(1), nil, nil}},
		"order_lines":         {{i(1), s("SKU"), i(1), i(1250)}},
		"idempotency_records": {{s("k1"), i(1), i(201), s("alice")}},
		"outbox": {
			{s("e-1"), i(1), s("SENT"), i(1), s("relay-a")},
			{s("e-2"), i(2), s("SENT"), i(1), s("relay-a")},
			{s("e-4"), i(4), s("SENT"), i(1), s("relay-a")}, // orphan-sent
			{s("e-9"), i(-1), s("SENT"), i(0), nil},         // a SENT decoy: orphan-sent and sent-without-effect
		},
		"inbox": {{s("c"), s("e-1")}, {s("c"), s("e-7")}}, // e-7: inbox-without-effect
		"notification": {
			{i(1), s("c"), s("e-1"), i(1)},
			{i(2), s("c"), s("e-1"), i(1)}, // duplicated-effects
			{i(3), s("c"), s("e-4"), i(4)}, // orphan-effects, effect-without-inbox
			{i(4), s("c"), s("e-9"), i(1)}, // effect-without-inbox
		},
	}
	var out []TableRows
	for _, spec := range evidence.DigestSpecs {
		out = append(out, TableRows{Table: spec.Table, Columns: spec.Columns, Rows: rows[spec.Table]})
	}
	return out
}

var invariantFixtureWant = map[string]int64{
	"orphan-sent":          2, // e-4 and the SENT decoy e-9
	"sent-without-effect":  1, // e-2 (e-9 has notification 4)
	"effect-without-inbox": 2, // notifications 3 and 4
	"duplicated-effects":   1, // e-1
	"orphan-effects":       1, // notification 3
	"order-without-intent": 1, // order 3
	"inbox-without-effect": 1, // e-7
}

func checkInvariantFixture(t *testing.T, e *engine) {
	t.Helper()
	ctx := t.Context()
	if err := e.reset(ctx); err != nil {
		t.Fatal(err)
	}
	var srcs []tableSource
	for _, t := range invariantFixture() {
		srcs = append(srcs, t.source())
	}
	if err := e.load(ctx, srcs); err != nil {
		t.Fatal(err)
	}
	invs, err := invariants.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range invs {
		n, err := e.countInvariant(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		if n != invariantFixtureWant[inv.ID] {
			t.Errorf("invariants.CountRows(%s) = %d; want %d", inv.ID, n, invariantFixtureWant[inv.ID])
		}
	}
}

func TestInvariantsSQLite(t *testing.T) {
	e, err := openSQLite(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer e.close(context.Background())
	checkInvariantFixture(t, e)
}

// mysqlDSN returns the DSN of the MySQL/MariaDB server for integration
// tests: ORDERFLOW_MYSQL_DSN or the default. -short skips them; with CI set
// an unreachable server fails instead of skipping.
func mysqlDSN(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs MySQL/MariaDB (skipped with -short)")
	}
	dsn := os.Getenv("ORDERFLOW_MYSQL_DSN")
	if dsn == "" {
		dsn = "root@tcp(127.0.0.1:3306)/"
	}
	return dsn
}

func openTestMySQL(t *testing.T) *engine {
	t.Helper()
	e, err := openMySQL(t.Context(), mysqlDSN(t), "checks-test")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() {
		if err := e.close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return e
}

func TestInvariantsMySQL(t *testing.T) {
	checkInvariantFixture(t, openTestMySQL(t))
}

// TestInvariantsOnLiveSchema runs every invariant on the real DDL
// (migrations/*.up.sql, read as files: checks/ does not import the
// migrations package, only its leaf splitter), as the runner does on the
// live database.
func TestInvariantsOnLiveSchema(t *testing.T) {
	e := openTestMySQL(t)
	ctx := t.Context()
	files, err := filepath.Glob("../migrations/*.up.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	slices.Sort(files)
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range sqlsplit.Split(string(body)) {
			if strings.Contains(stmt, "ofa_marker") {
				continue // the scratch database has it already
			}
			if _, err := e.db.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
	}
	if _, err := e.db.ExecContext(ctx, `INSERT INTO orders (id, principal, sku, quantity, amount_cents) VALUES (7, 'p', 'S', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	invs, _ := invariants.All()
	for _, inv := range invs {
		n, err := invariants.CountRows(ctx, e.db, inv)
		if err != nil {
			t.Fatalf("%s on the live schema: %v", inv.ID, err)
		}
		want := int64(0)
		if inv.ID == "order-without-intent" {
			want = 1
		}
		if n != want {
			t.Errorf("invariants.CountRows(%s) = %d; want %d", inv.ID, n, want)
		}
	}
}

// TestDigestMatchesSQL: the digest computed from the replayed rows equals
// evidence.DigestTable (the procedure the runner digests the live tables
// with) on the same rows loaded into SQLite and into MySQL/MariaDB.
func TestDigestMatchesSQL(t *testing.T) {
	sets := map[string][]tableSource{}
	var fx []tableSource
	for _, tr := range invariantFixture() {
		fx = append(fx, tr.source())
	}
	sets["invariant-fixture"] = fx
	for _, dir := range modeltest.Histories(t, "model/testdata/histories") {
		h := modeltest.Load(t, dir)
		m := model.New(nil, h.FaultPoints)
		for i := range h.Events {
			m.Step(&h.Events[i], Source{Seq: h.Events[i].Seq})
		}
		sets[h.Name] = sources(m)
	}
	engines := map[string]func(t *testing.T) *engine{
		"sqlite": func(t *testing.T) *engine {
			e, err := openSQLite(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.close(context.Background()) })
			return e
		},
		"mysql": openTestMySQL,
	}
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			for set, srcs := range sets {
				if err := e.reset(t.Context()); err != nil {
					t.Fatal(err)
				}
				if err := e.load(t.Context(), srcs); err != nil {
					t.Fatalf("%s: %v", set, err)
				}
				for _, s := range srcs {
					want, err := evidence.DigestTable(t.Context(), e.db, s.spec)
					if err != nil {
						t.Fatal(err)
					}
					if got := digestSource(s); got != want {
						t.Errorf("%s: digest of %s from the rows = %+v; read back from SQL %+v", set, s.spec.Table, got, want)
					}
				}
			}
		})
	}
}
