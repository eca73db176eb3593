package relay

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
)

// Mark is the compare-and-set to SENT on c's token, in its own short
// statement. It emits a mark event with the affected rows and returns them:
// 0 means the lease was lost (another relay holds a newer token, or the row
// is already SENT); that is not an error. See qMark for why the driver's
// changed-rows count is the matched-rows count here.
func (r *Relay) Mark(ctx context.Context, c Claimed) (rows int64, err error) {
	var res sql.Result
	switch r.cfg.Plant {
	case plant.MarkWithoutToken:
		res, err = r.cfg.DB.ExecContext(ctx, qMarkWithoutToken, c.EventID)
	case plant.MarkCASClaimIDOnly:
		res, err = r.cfg.DB.ExecContext(ctx, qMarkClaimIDOnly, c.EventID, c.ClaimID)
	default:
		res, err = r.cfg.DB.ExecContext(ctx, qMark, c.EventID, c.ClaimVersion, c.ClaimID)
	}
	if err != nil {
		return 0, fmt.Errorf("mark %s: %w", c.EventID, err)
	}
	rows, err = res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("mark %s: rows affected: %w", c.EventID, err)
	}
	if err := r.cfg.Log.Emit(evidence.Event{
		Actor:        r.cfg.Actor,
		Kind:         evidence.KindMark,
		EventID:      c.EventID,
		OrderID:      evidence.Ptr(c.OrderID),
		ClaimVersion: evidence.Ptr(c.ClaimVersion),
		ClaimID:      c.ClaimID,
		Rows:         evidence.Ptr(rows),
	}); err != nil {
		return rows, fmt.Errorf("mark %s: record mark: %w", c.EventID, err)
	}
	return rows, nil
}

// MarkBatch is Mark for every claim of cs at once: one short transaction
// at READ COMMITTED holding one compare-and-set over the whole batch, in
// two statements. The first locks, through the primary key, the rows
// still CLAIMED under each claim's own token (id, claim_version,
// claim_id) and returns which they are; the second sets exactly those to
// SENT, checking each row's token again. The rows locked are the marks
// that hit, row by row, whatever the others did: a row another relay took
// over, or that is already SENT, is not locked and is a mark of 0 rows.
// After the commit it emits one mark event per claim, in the order of cs,
// with rows 1 or 0, and returns the rows per claim.
func (r *Relay) MarkBatch(ctx context.Context, cs []Claimed) ([]int64, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	hit, err := r.markTx(ctx, cs)
	if err != nil {
		return nil, err
	}
	rows := make([]int64, len(cs))
	for i, c := range cs {
		if hit[c.ID] {
			rows[i] = 1
		}
		if err := r.cfg.Log.Emit(evidence.Event{
			Actor:        r.cfg.Actor,
			Kind:         evidence.KindMark,
			EventID:      c.EventID,
			OrderID:      evidence.Ptr(c.OrderID),
			ClaimVersion: evidence.Ptr(c.ClaimVersion),
			ClaimID:      c.ClaimID,
			Rows:         evidence.Ptr(rows[i]),
		}); err != nil {
			return rows, fmt.Errorf("mark %s: record mark: %w", c.EventID, err)
		}
	}
	return rows, nil
}

// markTx runs the batch's compare-and-set and returns the ids it set to
// SENT.
func (r *Relay) markTx(ctx context.Context, cs []Claimed) (hit map[int64]bool, err error) {
	lockQ, markQ, width, args := r.markQueries(cs)
	tx, err := r.cfg.DB.BeginTx(ctx, claimTxOptions)
	if err != nil {
		return nil, fmt.Errorf("mark %d intents: begin: %w", len(cs), err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	ids, err := lockedIDs(ctx, tx, fmt.Sprintf(lockQ, placeholders(len(cs), width)), args)
	if err != nil {
		return nil, fmt.Errorf("mark %d intents: %w", len(cs), err)
	}
	hit = make(map[int64]bool, len(ids))
	var markArgs []any
	for i, c := range cs {
		if ids[c.ID] && !hit[c.ID] {
			hit[c.ID] = true
			markArgs = append(markArgs, args[i*width:(i+1)*width]...)
		}
	}
	if len(hit) > 0 {
		res, err := tx.ExecContext(ctx, fmt.Sprintf(markQ, placeholders(len(hit), width)), markArgs...)
		if err != nil {
			return nil, fmt.Errorf("mark %d intents: update: %w", len(cs), err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("mark %d intents: rows affected: %w", len(cs), err)
		} else if n != int64(len(hit)) {
			return nil, fmt.Errorf("mark %d intents: update changed %d rows of the %d it locked", len(cs), n, len(hit))
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("mark %d intents: commit: %w", len(cs), err)
	}
	return hit, nil
}

// markQueries returns the batch mark's two statements for the relay's
// plant, the number of placeholders per claim, and the arguments of the
// lock statement (width per claim, in the order of cs).
func (r *Relay) markQueries(cs []Claimed) (lockQ, markQ string, width int, args []any) {
	switch r.cfg.Plant {
	case plant.MarkWithoutToken:
		lockQ, markQ, width = qMarkLockWithoutToken, qMarkRowsWithoutToken, 1
	case plant.MarkCASClaimIDOnly:
		lockQ, markQ, width = qMarkLockClaimIDOnly, qMarkRowsClaimIDOnly, 2
	default:
		lockQ, markQ, width = qMarkLock, qMarkRows, 3
	}
	args = make([]any, 0, width*len(cs))
	for _, c := range cs {
		switch width {
		case 1:
			args = append(args, c.ID)
		case 2:
			args = append(args, c.ID, c.ClaimID)
		default:
			args = append(args, c.ID, c.ClaimVersion, c.ClaimID)
		}
	}
	return lockQ, markQ, width, args
}

// lockedIDs runs a locking select of ids.
func lockedIDs(ctx context.Context, tx *sql.Tx, q string, args []any) (map[int64]bool, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	defer rows.Close()
	ids := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("lock: scan: %w", err)
		}
		ids[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	return ids, nil
}
