package relay

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// TestClaimInVersionOrder: each branch of the claim takes an intent only
// when no earlier version of its aggregate is unsent: aggregate 1 has
// version 1 in the state under test and versions 2 and 3 due; aggregate 2
// has only version 1 due. Version 2 of aggregate 1 is claimable once
// version 1 is SENT and not before, also while another relay holds
// version 1 locked in its own claim.
func TestClaimInVersionOrder(t *testing.T) {
	for _, tc := range []struct {
		name, v1 string // the state of version 1 of aggregate 1
		branch   string // the branch versions 2 and 3 are due in
		want     []string
	}{
		{"v1 pending", "'PENDING', 0, NULL, NULL", "pending", []string{"a1-v1", "a2-v1"}},
		{"v1 claimed, live lease", "'CLAIMED', 1, 'x', NOW(6) + INTERVAL 1 HOUR", "pending", []string{"a2-v1"}},
		{"v1 claimed, expired lease", "'CLAIMED', 1, 'x', NOW(6) - INTERVAL 1 HOUR", "pending", []string{"a1-v1", "a2-v1"}},
		{"v1 sent", "'SENT', 1, 'x', NOW(6) - INTERVAL 1 HOUR", "pending", []string{"a1-v2", "a2-v1"}},
		{"v1 claimed, later versions expired", "'CLAIMED', 1, 'x', NOW(6) + INTERVAL 1 HOUR", "expired", []string{"a2-v1"}},
		{"v1 sent, later versions expired", "'SENT', 1, 'x', NOW(6) - INTERVAL 1 HOUR", "expired", []string{"a1-v2", "a2-v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := infratest.Scratch(t)
			later := "'PENDING', 0, NULL, NULL"
			if tc.branch == "expired" {
				later = "'CLAIMED', 1, 'y', NOW(6) - INTERVAL 1 MINUTE"
			}
			a2 := later
			rows := []string{
				fmt.Sprintf("('a1-v1', 1, 1, '{}', %s)", tc.v1),
				fmt.Sprintf("('a1-v2', 1, 2, '{}', %s)", later),
				fmt.Sprintf("('a1-v3', 1, 3, '{}', %s)", later),
				fmt.Sprintf("('a2-v1', 2, 1, '{}', %s)", a2),
			}
			if _, err := sc.DB.ExecContext(t.Context(), `INSERT INTO outbox
  (event_id, aggregate_id, aggregate_version, payload, state, claim_version, claim_id, lease_until) VALUES `+strings.Join(rows, ", ")); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range []string{qClaimExpired, qClaimPending} {
				rs, err := sc.DB.QueryContext(t.Context(), strings.Replace(q, "FOR UPDATE SKIP LOCKED", "", 1), 10)
				if err != nil {
					t.Fatal(err)
				}
				for rs.Next() {
					var id, agg, ver int64
					var ev, state string
					var payload []byte
					if err := rs.Scan(&id, &ev, &agg, &ver, &payload, &state); err != nil {
						t.Fatal(err)
					}
					got = append(got, ev)
				}
				rs.Close()
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("claimable %v; want %v", got, tc.want)
			}
		})
	}
}

// TestClaimWaitsForAnotherRelaysEarlierVersion: while another relay's
// claim transaction holds version 1 of an aggregate (not yet committed,
// so still PENDING to everyone else), a claim skips it and does not take
// version 2 either.
func TestClaimWaitsForAnotherRelaysEarlierVersion(t *testing.T) {
	sc := infratest.Scratch(t)
	ctx := t.Context()
	if _, err := sc.DB.ExecContext(ctx, `INSERT INTO outbox
  (event_id, aggregate_id, aggregate_version, payload, state, claim_version) VALUES
  ('a1-v1', 1, 1, '{}', 'PENDING', 0), ('a1-v2', 1, 2, '{}', 'PENDING', 0)`); err != nil {
		t.Fatal(err)
	}
	other, err := sc.DB.BeginTx(ctx, claimTxOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	if got := claimOn(t, ctx, other, qClaimPending, 10); got.returned != 1 {
		t.Fatalf("the other relay's claim returned %d rows; want version 1 alone", got.returned)
	}
	tx, err := sc.DB.BeginTx(ctx, claimTxOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if got := claimOn(t, ctx, tx, qClaimPending, 10); got.returned != 0 {
		t.Fatalf("a claim beside it returned %d rows (ids %v); want none: version 1 is locked, version 2 waits for it", got.returned, got.ids)
	}
}
