package relay

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// seedHistory inserts sent SENT rows (an outbox that keeps its history),
// then expired CLAIMED rows and pending PENDING rows after them, in
// multi-row statements.
func seedHistory(t *testing.T, db *sql.DB, sent, expired, pending int) {
	t.Helper()
	const chunk = 2000
	insert := func(n int, prefix, values string) {
		for done := 0; done < n; done += chunk {
			var vals []string
			for i := done; i < min(n, done+chunk); i++ {
				vals = append(vals, fmt.Sprintf(values, prefix+fmt.Sprint(i), i+1))
			}
			if _, err := db.ExecContext(t.Context(), `INSERT INTO outbox
  (event_id, aggregate_id, aggregate_version, payload, state, claim_version, claim_id, lease_until) VALUES `+
				strings.Join(vals, ", ")); err != nil {
				t.Fatal(err)
			}
		}
	}
	insert(sent, "s-", `('%s', %d, 1, '{}', 'SENT', 1, 'x', NOW(6) - INTERVAL 1 HOUR)`)
	insert(expired, "c-", `('%s', %d, 1, '{}', 'CLAIMED', 1, 'x', NOW(6) - INTERVAL 1 MINUTE)`)
	insert(pending, "p-", `('%s', %d, 1, '{}', 'PENDING', 0, NULL, NULL)`)
	if _, err := db.ExecContext(t.Context(), `ANALYZE TABLE outbox`); err != nil {
		t.Fatal(err)
	}
}

// tableStats is what ANALYZE FORMAT=JSON says about one table access.
type tableStats struct {
	Name   string  `json:"table_name"`
	Key    string  `json:"key"`
	RRows  float64 `json:"r_rows"`
	RLoops float64 `json:"r_loops"`
}

// analyzeClaim runs q (a claim branch) under ANALYZE FORMAT=JSON, which
// executes it, locks included, and returns every table access of its plan
// (wherever it sits: under nested_loop, filesort, ...) and the whole plan
// text (to look for a filesort anywhere in it).
func analyzeClaim(t *testing.T, tx *sql.Tx, q string, limit int) ([]tableStats, string) {
	t.Helper()
	var plan string
	if err := tx.QueryRowContext(t.Context(), "ANALYZE FORMAT=JSON "+q, limit).Scan(&plan); err != nil {
		t.Fatalf("ANALYZE FORMAT=JSON: %v", err)
	}
	var doc any
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		t.Fatalf("ANALYZE plan: %v\n%s", err, plan)
	}
	var out []tableStats
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				if m, ok := sub.(map[string]any); ok && k == "table" {
					b, _ := json.Marshal(m)
					var ts tableStats
					_ = json.Unmarshal(b, &ts)
					out = append(out, ts)
				}
				walk(sub)
			}
		case []any:
			for _, sub := range v {
				walk(sub)
			}
		}
	}
	walk(doc)
	if len(out) == 0 {
		t.Fatalf("ANALYZE plan has no table:\n%s", plan)
	}
	return out, plan
}

// claimCost checks one executed claim query's plan: the claim's table
// access through idx_outbox_due, no filesort, and its rows read (r_rows ×
// r_loops) at most maxReadRatio × the rows returned; the lookup of each
// candidate's earlier versions (the subquery's table "earlier") through
// idx_outbox_aggregate, reading at most maxAggregateRows per candidate.
// It returns what is wrong, and every row read.
func claimCost(tables []tableStats, plan string, returned int) (problems []string, read float64) {
	if strings.Contains(plan, "filesort") {
		problems = append(problems, "the plan sorts (filesort): it reads, and locks, every candidate before the LIMIT")
	}
	var claimRead float64
	for _, a := range tables {
		read += a.RRows * a.RLoops
		switch {
		case a.Name == "earlier" && a.Key != "idx_outbox_aggregate":
			problems = append(problems, fmt.Sprintf("looks up earlier versions through key %q, not idx_outbox_aggregate", a.Key))
		case a.Name == "earlier" && a.RRows > maxAggregateRows:
			problems = append(problems, fmt.Sprintf("reads %.1f rows per lookup of earlier versions; want at most %d", a.RRows, maxAggregateRows))
		case a.Name == "earlier":
		case a.Key != "idx_outbox_due":
			problems = append(problems, fmt.Sprintf("reads %s through key %q, not idx_outbox_due", a.Name, a.Key))
		default:
			claimRead += a.RRows * a.RLoops
		}
	}
	if claimRead > float64(maxReadRatio*returned) {
		problems = append(problems, fmt.Sprintf("read %.0f rows for %d returned; want at most %d", claimRead, returned, maxReadRatio*returned))
	}
	return problems, read
}

// maxReadRatio bounds the rows a claim query reads per row it returns.
const maxReadRatio = 2

// maxAggregateRows bounds the rows a lookup of a candidate's earlier
// versions reads: the rows of its aggregate id, of which seedHistory
// writes at most three (a SENT, an expired and a pending one).
const maxAggregateRows = 3

// The claim's cost does not grow with the history: with h SENT rows in
// front of the due ones, each branch of the claim, executed by ANALYZE
// FORMAT=JSON (MariaDB), reads the index idx_outbox_due without a
// filesort, and the rows it reads stay within maxReadRatio × the rows it
// returns. The old single OR query sorted by id read every SENT row:
// 20,016 rows read to return 16.
func TestClaimAnalyzeHistory(t *testing.T) {
	const (
		limit   = 16
		expired = 40
		pending = 200
	)
	sc := infratest.Scratch(t)
	for _, h := range []int{0, 20000} {
		t.Run(fmt.Sprintf("%d SENT", h), func(t *testing.T) {
			if _, err := sc.DB.ExecContext(t.Context(), `DELETE FROM outbox`); err != nil {
				t.Fatal(err)
			}
			seedHistory(t, sc.DB, h, expired, pending)
			for _, cq := range claimQueries {
				tx, err := sc.DB.BeginTx(t.Context(), claimTxOptions)
				if err != nil {
					t.Fatal(err)
				}
				tables, plan := analyzeClaim(t, tx, cq.q, limit)
				returned := claimOn(t, t.Context(), tx, cq.q, limit).returned
				_ = tx.Rollback()
				if returned != limit {
					t.Fatalf("%s branch returned %d rows; want %d", cq.name, returned, limit)
				}
				problems, read := claimCost(tables, plan, returned)
				t.Logf("%s branch, %d SENT: %.0f rows read for %d returned", cq.name, h, read, returned)
				for _, p := range problems {
					t.Errorf("%s branch, %d SENT: %s\n%s", cq.name, h, p, plan)
				}
			}
		})
	}
}

// The check above can fail: the single OR query the claim used before,
// on a table of 5,000 SENT rows and 100 PENDING, either walks the
// primary key through the SENT rows or reads every due row into a
// filesort (the optimizer picks by the table's size); either way the
// check says so.
func TestClaimAnalyzeCatchesScan(t *testing.T) {
	const q = `SELECT id, event_id, aggregate_id, aggregate_version, payload, state
FROM outbox
WHERE state = 'PENDING' OR (state = 'CLAIMED' AND lease_until < NOW(6))
ORDER BY id
LIMIT ?
FOR UPDATE SKIP LOCKED`
	sc := infratest.Scratch(t)
	seedHistory(t, sc.DB, 5000, 0, 100)
	tx, err := sc.DB.BeginTx(t.Context(), claimTxOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	tables, plan := analyzeClaim(t, tx, q, 16)
	problems, read := claimCost(tables, plan, 16)
	t.Logf("the OR query read %.0f rows for 16: %v", read, problems)
	if len(problems) == 0 || read <= maxReadRatio*16 {
		t.Fatalf("the OR query read %.0f rows for 16 and passed the check (%v); want it caught", read, problems)
	}
}

// A claim locks the rows it returns and no other: while a claim
// transaction of each branch holds its rows, another session can lock
// the next due row of that branch and a SENT row in front of them at
// once (NOWAIT), and cannot lock a row the claim returned.
func TestClaimLocksOnlyWhatItReturns(t *testing.T) {
	const limit = 4
	sc := infratest.Scratch(t)
	seedHistory(t, sc.DB, 200, 10, 10)
	ctx := t.Context()
	other, err := sc.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tryLock := func(id int64) error {
		otx, err := other.BeginTx(ctx, claimTxOptions)
		if err != nil {
			t.Fatal(err)
		}
		defer otx.Rollback()
		var got int64
		return otx.QueryRowContext(ctx, `SELECT id FROM outbox WHERE id = ? FOR UPDATE NOWAIT`, id).Scan(&got)
	}
	for _, cq := range claimQueries {
		t.Run(cq.name, func(t *testing.T) {
			tx, err := sc.DB.BeginTx(ctx, claimTxOptions)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			got := claimOn(t, ctx, tx, cq.q, limit)
			if got.returned != limit {
				t.Fatalf("claimed %d rows; want %d", got.returned, limit)
			}
			state := map[string]string{"expired": "CLAIMED", "pending": "PENDING"}[cq.name]
			var next, sent int64
			if err := sc.DB.QueryRowContext(ctx, `SELECT MIN(id) FROM outbox WHERE state = ? AND id > ?`, state, slices.Max(got.ids)).Scan(&next); err != nil {
				t.Fatal(err)
			}
			if err := sc.DB.QueryRowContext(ctx, `SELECT MIN(id) FROM outbox WHERE state = 'SENT'`).Scan(&sent); err != nil {
				t.Fatal(err)
			}
			for _, id := range []int64{next, sent} {
				if err := tryLock(id); err != nil {
					t.Errorf("row %d, which the claim did not return, is locked: %v", id, err)
				}
			}
			if err := tryLock(got.ids[0]); err == nil {
				t.Errorf("row %d, which the claim returned, could be locked by another session", got.ids[0])
			}
		})
	}
}
