package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/invariants"
)

// recordEndState runs the invariant queries (the same files the verifier
// runs on the replayed state) against the live database, emitting one
// invariant event each, and digests every table of evidence.DigestSpecs.
func (e *Env) recordEndState(ctx context.Context, rec *evidence.Scenario) error {
	invs, err := invariants.All()
	if err != nil {
		return err
	}
	var errs []error
	for _, inv := range invs {
		n, err := invariants.CountRows(ctx, e.DB, inv)
		if err != nil {
			errs = append(errs, fmt.Errorf("invariant %s: %w", inv.ID, err))
			continue
		}
		rec.Invariants = append(rec.Invariants, evidence.InvariantResult{ID: inv.ID, Rows: n})
		if err := e.Emit(evidence.Event{Kind: evidence.KindInvariant, Invariant: inv.ID, Rows: evidence.Ptr(n)}); err != nil {
			errs = append(errs, err)
		}
	}
	for _, spec := range evidence.DigestSpecs {
		d, err := evidence.DigestTable(ctx, e.DB, spec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rec.Tables = append(rec.Tables, d)
	}
	return errors.Join(errs...)
}

// InvariantRows returns the live result of one invariant on this scenario's
// database.
func (e *Env) InvariantRows(ctx context.Context, id string) (int64, error) {
	invs, err := invariants.All()
	if err != nil {
		return 0, err
	}
	for _, inv := range invs {
		if inv.ID == id {
			return invariants.CountRows(ctx, e.DB, inv)
		}
	}
	return 0, fmt.Errorf("unknown invariant %q", id)
}
