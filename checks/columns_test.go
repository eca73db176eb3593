package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/crosscheck"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// Every column is somebody's business (issue 23): every column of the
// migrations has rules that hold it in the binlog (crosscheck.ColumnRules),
// and a real run whose binlog has one column of one row written otherwise,
// in every image of that row, fails one of them.

var (
	createTableRE = regexp.MustCompile(`(?s)CREATE TABLE (\w+) \((.*?)\n\);`)
	columnLineRE  = regexp.MustCompile(`^\s+(\w+)\s+[A-Z]`)
)

// migrationColumns reads the tables and columns of ../migrations/*.sql.
func migrationColumns(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "migrations", "*.up.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	out := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range createTableRE.FindAllStringSubmatch(string(b), -1) {
			for _, l := range strings.Split(m[2], "\n") {
				c := columnLineRE.FindStringSubmatch(l)
				if c == nil || slices.Contains([]string{"PRIMARY", "UNIQUE", "KEY", "CONSTRAINT", "INDEX"}, c[1]) {
					continue
				}
				out[m[1]] = append(out[m[1]], c[1])
			}
		}
	}
	return out
}

// TestEveryColumnHasRules: the columns of the migrations and those of
// crosscheck.ColumnRules are the same, and every rule named is one of
// the checker's.
func TestEveryColumnHasRules(t *testing.T) {
	migrated := migrationColumns(t)
	if len(migrated) < 7 {
		t.Fatalf("read %d tables from the migrations: %v", len(migrated), migrated)
	}
	var uncovered, stale []string
	for table, cols := range migrated {
		for _, col := range cols {
			if len(crosscheck.ColumnRules[table][col]) == 0 {
				uncovered = append(uncovered, table+"."+col)
			}
		}
	}
	for table, cols := range crosscheck.ColumnRules {
		for col, rules := range cols {
			if !slices.Contains(migrated[table], col) {
				stale = append(stale, table+"."+col)
			}
			for _, r := range rules {
				if !slices.ContainsFunc(Rules, func(x RuleInfo) bool { return string(x.Rule) == r }) {
					t.Errorf("%s.%s names rule %q, which is not the checker's", table, col, r)
				}
			}
		}
	}
	slices.Sort(uncovered)
	slices.Sort(stale)
	if len(uncovered) > 0 {
		t.Errorf("columns of the migrations that no rule holds: %v", uncovered)
	}
	if len(stale) > 0 {
		t.Errorf("crosscheck.ColumnRules names columns the migrations do not have: %v", stale)
	}
}

// surrogate tells whether table.col is a key the server assigns that no
// event names (the edit makes it another row's).
func surrogate(table, col string) bool {
	return col == "id" && slices.Contains([]string{"order_lines", "idempotency_records", "outbox"}, table)
}

// rowKeyCols are the columns that name a row across its images.
var rowKeyCols = map[string][]string{"stock": {"sku"}, "inbox": {"consumer", "event_id"}}

// columnEdit is one edit of the witnessed fixture's binlog: in scenario's
// database, column col of the row first written with a value there,
// changed in every image of that row from then on (or, with all, in every
// image of every row of the table).
type columnEdit struct {
	scenario, table, col string
	all                  bool
	to                   func(v any, rows []map[string]binlog.Value) any
}

// TestEveryColumnEdited: for every column of crosscheck.ColumnRules, the
// witnessed fixture with that column written otherwise in one row fails
// one of the column's rules; a timestamp column also when every value of
// it lost its microseconds.
func TestEveryColumnEdited(t *testing.T) {
	runID := useCachedWitness(t)
	ws, err := pristineWitnesses(true, true)
	if err != nil {
		t.Fatal(err)
	}
	ev := readEvidence(t, filepath.Join("testdata", "witnessed", "u80.json"))
	for _, table := range slices.Sorted(maps.Keys(crosscheck.ColumnRules)) {
		for _, col := range slices.Sorted(maps.Keys(crosscheck.ColumnRules[table])) {
			edits := []columnEdit{{table: table, col: col, to: changed(table, col)}}
			if strings.HasSuffix(col, "_at") && col != "sent_at" && table != "ofa_marker" {
				edits = append(edits, columnEdit{table: table, col: col, all: true, to: func(v any, _ []map[string]binlog.Value) any {
					if tm, ok := v.(time.Time); ok {
						return tm.Truncate(time.Second)
					}
					return v
				}})
			}
			for _, ed := range edits {
				name := table + "." + col
				if ed.all {
					name += "/whole-seconds"
				}
				t.Run(name, func(t *testing.T) {
					ed.scenario = scenarioWith(t, ws, ev, runID, ed)
					edited := ws.WithRows(evidence.ScratchName(runID, ed.scenario), func(txs []binlog.Transaction) { applyEdit(t, txs, ed) })
					v := verifyWith(t, witnessedScenario(t, ed.scenario), edited)
					want := crosscheck.ColumnRules[table][col]
					if v.Status != Fail || !slices.ContainsFunc(v.Reasons, func(r Reason) bool {
						return r.Status == Fail && slices.Contains(want, string(r.Rule))
					}) {
						t.Fatalf("scenario %s with %s edited: verdict %s, rules %v; want FAIL by one of %v", ed.scenario, name, v.Status, rules(v), want)
					}
					if r, ok := witnessReason(v, "witness-column"); ok && (r.Witness == "" || r.Scenario != ed.scenario) {
						t.Errorf("witness-column at %q of scenario %q; want a place in the binlog of %s", r.Witness, r.Scenario, ed.scenario)
					}
				})
			}
		}
	}
}

// scenarioWith returns the first scenario of the fixture whose database
// has a row of the edit's table with a value in its column (two such
// rows for a surrogate key, which the edit makes a duplicate; four for an
// edit of every row, which the precision rule needs).
func scenarioWith(t *testing.T, ws *crosscheck.Witnesses, ev *evidence.Evidence, runID string, ed columnEdit) string {
	t.Helper()
	for _, sc := range ev.Scenarios {
		n := 0
		ws.WithRows(evidence.ScratchName(runID, sc.ID), func(txs []binlog.Transaction) {
			for _, tx := range txs {
				for _, c := range tx.Changes {
					if c.Table == ed.table && c.After[ed.col] != nil {
						n++
					}
				}
			}
		})
		if need := map[bool]int{true: 4, false: 1}[ed.all]; n >= need && (n >= 2 || !surrogate(ed.table, ed.col)) {
			return sc.ID
		}
	}
	t.Fatalf("no scenario of the witnessed fixture writes %s.%s", ed.table, ed.col)
	return ""
}

// changed returns the edit of one value of table.col: a surrogate key
// takes the key of the row inserted before it, a number grows by one, a
// JSON object's first number by one, a text gets a letter more, a time
// an hour.
func changed(table, col string) func(v any, rows []map[string]binlog.Value) any {
	return func(v any, rows []map[string]binlog.Value) any {
		switch x := v.(type) {
		case int64:
			if surrogate(table, col) {
				return rows[0][col]
			}
			return x + 1
		case uint64:
			return x + 1
		case time.Time:
			return x.Add(time.Hour)
		case string:
			var m map[string]any
			if json.Unmarshal([]byte(x), &m) == nil && m != nil {
				for _, k := range slices.Sorted(maps.Keys(m)) {
					if n, ok := m[k].(float64); ok {
						m[k] = n + 1
						b, _ := json.Marshal(m)
						return string(b)
					}
				}
			}
			return x + "x"
		}
		panic(fmt.Sprintf("no edit of %T", v))
	}
}

// applyEdit changes the edit's column: in every image of the first row
// of the table that has a value in it (and every later image of that
// row), or in every image of the table with all.
func applyEdit(t *testing.T, txs []binlog.Transaction, ed columnEdit) {
	keyCols := rowKeyCols[ed.table]
	if keyCols == nil {
		keyCols = []string{"id"}
	}
	key := func(img map[string]binlog.Value) string {
		var b strings.Builder
		for _, k := range keyCols {
			fmt.Fprintf(&b, "%v|", img[k])
		}
		return b.String()
	}
	var target string
	var earlier []map[string]binlog.Value
	done := false
	for i := range txs {
		for j := range txs[i].Changes {
			c := &txs[i].Changes[j]
			if c.Table != ed.table {
				continue
			}
			if !ed.all && target == "" {
				if c.After[ed.col] == nil || (surrogate(ed.table, ed.col) && len(earlier) == 0) {
					if c.Op == binlog.Insert {
						earlier = append(earlier, c.After)
					}
					continue
				}
				target = key(c.After)
				c.After[ed.col] = ed.to(c.After[ed.col], earlier) // its before image is the row before it was written so
				done = true
				continue
			}
			for _, img := range []map[string]binlog.Value{c.Before, c.After} {
				if img == nil || (!ed.all && key(img) != target) {
					continue
				}
				img[ed.col] = ed.to(img[ed.col], earlier)
				done = true
			}
		}
	}
	if !done {
		t.Fatalf("no row of %s with %s to edit in %s", ed.table, ed.col, ed.scenario)
	}
}

// verifyWith verifies the evidence at p with ws for its witnesses.
func verifyWith(t *testing.T, p string, ws *crosscheck.Witnesses) *Verdict {
	t.Helper()
	old := readWitnesses
	readWitnesses = func(context.Context, *evidence.Evidence, *bundle.Bundle) (*crosscheck.Witnesses, []Reason) {
		return ws, nil
	}
	defer func() { readWitnesses = old }()
	return verify(t, p)
}
