package relay

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// seedOutbox fills the outbox with n rows of each kind: SENT, CLAIMED with
// a live lease, CLAIMED with an expired lease, PENDING, interleaved by id.
func seedOutbox(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	var vals []string
	for i := range 4 * n {
		id := i + 1
		switch i % 4 {
		case 0:
			vals = append(vals, fmt.Sprintf("('e-%d', %d, 1, '{}', 'SENT', 1, 'x', NOW(6) - INTERVAL 1 HOUR)", id, id))
		case 1:
			vals = append(vals, fmt.Sprintf("('e-%d', %d, 1, '{}', 'CLAIMED', 1, 'x', NOW(6) + INTERVAL 1 HOUR)", id, id))
		case 2:
			vals = append(vals, fmt.Sprintf("('e-%d', %d, 1, '{}', 'CLAIMED', 1, 'x', NOW(6) - INTERVAL %d SECOND)", id, id, id))
		default:
			vals = append(vals, fmt.Sprintf("('e-%d', %d, 1, '{}', 'PENDING', 0, NULL, NULL)", id, id))
		}
	}
	if _, err := db.ExecContext(t.Context(), `INSERT INTO outbox
  (event_id, aggregate_id, aggregate_version, payload, state, claim_version, claim_id, lease_until) VALUES `+
		strings.Join(vals, ", ")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), `ANALYZE TABLE outbox`); err != nil {
		t.Fatal(err)
	}
}

// rowsRead is the sum of the session's handler read counters: every index
// or table row the server looked at.
func rowsRead(t *testing.T, conn *sql.Conn) int64 {
	t.Helper()
	rows, err := conn.QueryContext(t.Context(), `SHOW SESSION STATUS LIKE 'Handler_read%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sum int64
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}

// claimQueries are the two branches of the claim.
var claimQueries = []struct{ name, q string }{{"expired", qClaimExpired}, {"pending", qClaimPending}}

// Each branch of the claim reads idx_outbox_due in order, without a
// filesort (which would read, and lock, every candidate row before the
// LIMIT): EXPLAIN names the index and no filesort, whatever the size.
func TestClaimUsesIndex(t *testing.T) {
	for _, n := range []int{2, 500} {
		t.Run(fmt.Sprintf("%d rows", 4*n), func(t *testing.T) {
			sc := infratest.Scratch(t)
			seedOutbox(t, sc.DB, n)
			for _, cq := range claimQueries {
				rows, err := sc.DB.QueryContext(t.Context(), "EXPLAIN "+cq.q, 4)
				if err != nil {
					t.Fatal(err)
				}
				plan := explainRows(t, rows)
				for _, p := range plan {
					switch {
					case p["table"] == "earlier" && (p["key"] != "idx_outbox_aggregate" || p["type"] != "ref"):
						t.Errorf("%s branch: EXPLAIN %v; want the earlier versions looked up in idx_outbox_aggregate", cq.name, p)
					case p["table"] != "earlier" && (p["key"] != "idx_outbox_due" || strings.Contains(p["Extra"], "filesort")):
						t.Errorf("%s branch: EXPLAIN %v; want key idx_outbox_due and no filesort", cq.name, p)
					}
				}
				if len(plan) != 2 {
					t.Errorf("%s branch: EXPLAIN %v; want the claim's read and the lookup of earlier versions", cq.name, plan)
				}
			}
		})
	}
}

func explainRows(t *testing.T, rows *sql.Rows) []map[string]string {
	t.Helper()
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for i, c := range cols {
			m[c] = vals[i].String
		}
		out = append(out, m)
	}
	return out
}

// The rows a claim branch reads stay a small multiple of the rows it
// returns (each with the lookup of its aggregate's earlier versions), whatever else the table holds (here 2,000 rows, 500 due in each
// branch), also when another relay holds the first due rows locked: those
// are read and skipped, not waited for.
func TestClaimReadsFewRows(t *testing.T) {
	const limit = 4
	sc := infratest.Scratch(t)
	seedOutbox(t, sc.DB, 500)
	ctx := t.Context()
	for _, cq := range claimQueries {
		for _, held := range []int{0, limit} {
			t.Run(fmt.Sprintf("%s, %d held by another relay", cq.name, held), func(t *testing.T) {
				if held > 0 {
					other, err := sc.DB.BeginTx(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					defer other.Rollback()
					if got := claimOn(t, ctx, other, cq.q, held); got.returned != held {
						t.Fatalf("the other relay locked %d rows; want %d", got.returned, held)
					}
				}
				conn, err := sc.DB.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				tx, err := conn.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				before := rowsRead(t, conn)
				got := claimOn(t, ctx, tx, cq.q, limit)
				read := rowsRead(t, conn) - before
				t.Logf("%s branch: %d rows returned, %d read, ids %v", cq.name, got.returned, read, got.ids)
				if got.returned != limit {
					t.Fatalf("returned %d rows; want %d", got.returned, limit)
				}
				// Each candidate row: its entry of idx_outbox_due, and the
				// lookup of its aggregate's earlier versions (a key read
				// and the next).
				if bound := int64(4*(limit+held) + 2); read > bound {
					t.Errorf("read %d rows for %d returned (%d skipped); want at most %d", read, limit, held, bound)
				}
			})
		}
	}
}

type claimed struct {
	returned int
	ids      []int64
}

// claimOn runs a claim branch in tx and returns what it locked.
func claimOn(t *testing.T, ctx context.Context, tx interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, q string, limit int) claimed {
	t.Helper()
	rows, err := tx.QueryContext(ctx, q, limit)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out claimed
	for rows.Next() {
		var id int64
		var eventID, state string
		var agg int64
		var ver int
		var payload []byte
		if err := rows.Scan(&id, &eventID, &agg, &ver, &payload, &state); err != nil {
			t.Fatal(err)
		}
		out.returned++
		out.ids = append(out.ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
