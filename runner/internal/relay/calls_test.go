package relay_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
)

// A claim or a batch mark whose COMMIT took effect and lost its answer is
// read back and kept: the claims are returned, the marks hit. One whose
// COMMIT the server answered with an error is rolled back and returned
// as the error, and the rows are claimable again at once (no
// transaction holds them).
func TestUnknownCommitReadBack(t *testing.T) {
	lost := func(fault.CallSite, fault.CallMode) error {
		return fmt.Errorf("answer lost: %w", mysql.ErrInvalidConn)
	}
	deadlock := func(fault.CallSite, fault.CallMode) error {
		return &mysql.MySQLError{Number: 1213, Message: "deadlock"}
	}
	b := setup(t)
	ctx := t.Context()
	insertIntents(t, b.DB, 1, 2)
	in := &fault.Injector{}
	r := b.relay(t, "relay-a", func(c *relay.Config) { c.Faults = in })

	in.ArmCall("relay.claim.commit", fault.CallBefore, deadlock)
	if cs, err := r.Claim(ctx, 2); err == nil || len(cs) != 0 || !in.DisarmCall() {
		t.Fatalf("claim with its COMMIT refused = %v, %v; want an error and nothing claimed", cs, err)
	}
	in.ArmCall("relay.claim.commit", fault.CallAfter, lost)
	cs, err := r.Claim(ctx, 2) // the rows were not held by the refused claim's transaction
	if err != nil || len(cs) != 2 || !in.DisarmCall() {
		t.Fatalf("claim with its COMMIT's answer lost = %v, %v; want both rows, read back", cs, err)
	}
	in.ArmCall("relay.mark.commit", fault.CallAfter, lost)
	rows, err := r.MarkBatch(ctx, cs)
	if err != nil || len(rows) != 2 || rows[0] != 1 || rows[1] != 1 || !in.DisarmCall() {
		t.Fatalf("mark with its COMMIT's answer lost = %v, %v; want both hit, read back", rows, err)
	}
	var sent int
	if err := b.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox WHERE state = 'SENT'`).Scan(&sent); err != nil || sent != 2 {
		t.Fatalf("SENT rows = %d, %v; want 2", sent, err)
	}
	var me *mysql.MySQLError
	insertIntents(t, b.DB, 3)
	in.ArmCall("relay.claim.commit", fault.CallBefore, deadlock)
	if _, err := r.Claim(ctx, 1); !errors.As(err, &me) || me.Number != 1213 {
		t.Fatalf("claim error %v; want the server's answer wrapped", err)
	}
}
