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
	q, args := qMark, []any{c.EventID, c.ClaimVersion, c.ClaimID}
	switch r.cfg.Plant {
	case plant.MarkWithoutToken:
		q, args = qMarkWithoutToken, []any{c.EventID}
	case plant.MarkCASClaimIDOnly:
		q, args = qMarkClaimIDOnly, []any{c.EventID, c.ClaimID}
	}
	if err := r.db("relay.mark-one.update", func() (err error) { res, err = r.cfg.DB.ExecContext(ctx, q, args...); return err }); err != nil {
		if !outcomeUnknown(err) {
			return 0, fmt.Errorf("mark %s: %w", c.EventID, err)
		}
		// No answer: the statement (its own transaction) may have
		// committed. The row read back says whether it is SENT under c's
		// token; otherwise the mark is not known to have happened.
		if _, rerr := r.resolveMark(ctx, []Claimed{c}, markQuery{}, map[int64]bool{c.ID: true}, err); rerr != nil {
			return 0, fmt.Errorf("mark %s: %w", c.EventID, rerr)
		}
		rows = 1
	} else if rows, err = res.RowsAffected(); err != nil {
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

// MarkBatch is Mark for every claim of cs at once: one compare-and-set
// statement over the whole batch that checks each row's own token (id,
// claim_version, claim_id), in a short transaction at READ COMMITTED, and
// the count of which marks hit, row by row. When the statement changed as
// many rows as there are claims, every mark hit (each row matches one
// token at most), and it commits. Otherwise it is rolled back and the
// batch marked again exactly: a locking read through the primary key
// returns the rows still CLAIMED under their own token, and the same
// statement sets exactly those; a row another relay took over, or that is
// already SENT, is not locked and is a mark of 0 rows. After the commit it
// emits one mark event per claim, in the order of cs, with rows 1 or 0,
// and returns the rows per claim.
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
func (r *Relay) markTx(ctx context.Context, cs []Claimed) (map[int64]bool, error) {
	q := r.markQueries(cs)
	hit, err := r.markEvery(ctx, cs, q)
	if err != nil || hit != nil {
		return hit, err
	}
	return r.markLocked(ctx, cs, q)
}

// markEvery sets every row of cs to SENT if every token still holds, and
// returns them all; when one does not, it rolls back and returns nil.
func (r *Relay) markEvery(ctx context.Context, cs []Claimed, q markQuery) (hit map[int64]bool, err error) {
	hit = make(map[int64]bool, len(cs))
	for _, c := range cs {
		hit[c.ID] = true
	}
	var tx *sql.Tx
	if err := r.db("relay.mark.begin", func() (err error) { tx, err = r.cfg.DB.BeginTx(ctx, claimTxOptions); return err }); err != nil {
		return nil, fmt.Errorf("mark %d intents: begin: %w", len(cs), err)
	}
	defer func() {
		if hit == nil || err != nil {
			_ = tx.Rollback()
		}
	}()
	n, err := r.execRows(ctx, "relay.mark.update", tx, fmt.Sprintf(q.mark, placeholders(len(cs), q.width)), q.args)
	if err != nil {
		return nil, fmt.Errorf("mark %d intents: update: %w", len(cs), err)
	}
	if n != int64(len(hit)) {
		return nil, nil
	}
	if err := r.commit("relay.mark.commit", tx); err != nil {
		if !outcomeUnknown(err) {
			return nil, fmt.Errorf("mark %d intents: commit: %w", len(cs), err)
		}
		return r.resolveMark(ctx, cs, q, hit, err)
	}
	return hit, nil
}

// markLocked locks the rows of cs whose tokens still hold, sets exactly
// those to SENT, and returns them.
func (r *Relay) markLocked(ctx context.Context, cs []Claimed, q markQuery) (hit map[int64]bool, err error) {
	var tx *sql.Tx
	if err := r.db("relay.mark-locked.begin", func() (err error) { tx, err = r.cfg.DB.BeginTx(ctx, claimTxOptions); return err }); err != nil {
		return nil, fmt.Errorf("mark %d intents: begin: %w", len(cs), err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	ids, err := r.lockedIDs(ctx, "relay.mark-locked.lock", tx, fmt.Sprintf(q.lock, placeholders(len(cs), q.width)), q.args)
	if err != nil {
		return nil, fmt.Errorf("mark %d intents: %w", len(cs), err)
	}
	hit = make(map[int64]bool, len(ids))
	var args []any
	for i, c := range cs {
		if ids[c.ID] && !hit[c.ID] {
			hit[c.ID] = true
			args = append(args, q.args[i*q.width:(i+1)*q.width]...)
		}
	}
	if len(hit) > 0 {
		n, err := r.execRows(ctx, "relay.mark-locked.update", tx, fmt.Sprintf(q.mark, placeholders(len(hit), q.width)), args)
		if err != nil {
			return nil, fmt.Errorf("mark %d intents: update: %w", len(cs), err)
		}
		if n != int64(len(hit)) {
			return nil, fmt.Errorf("mark %d intents: update changed %d rows of the %d it locked", len(cs), n, len(hit))
		}
	}
	if err := r.commit("relay.mark-locked.commit", tx); err != nil {
		if !outcomeUnknown(err) {
			return nil, fmt.Errorf("mark %d intents: commit: %w", len(cs), err)
		}
		return r.resolveMark(ctx, cs, q, hit, err)
	}
	return hit, nil
}

// resolveMark settles a batch mark whose COMMIT got no answer (it may
// have committed): the rows of hit are read back on another connection.
// When every one is SENT under the token this mark held, the mark
// committed and hit is returned; when none is, it rolled back and the
// COMMIT's error is returned (a transaction commits as a whole).
func (r *Relay) resolveMark(ctx context.Context, cs []Claimed, q markQuery, hit map[int64]bool, cerr error) (map[int64]bool, error) {
	var ids []any
	for _, c := range cs {
		if hit[c.ID] {
			ids = append(ids, c.ID)
		}
	}
	tokens, err := readTokens(ctx, r, "relay.mark.resolve", r.cfg.DB, ids)
	if err != nil {
		return nil, fmt.Errorf("mark %d intents: commit: %w (and reading the rows back failed: %v)", len(cs), cerr, err)
	}
	sent := 0
	for _, c := range cs {
		if t, ok := tokens[c.ID]; ok && hit[c.ID] && t.StateBefore == evidence.StateSent && t.ClaimVersion == c.ClaimVersion && t.ClaimID == c.ClaimID {
			sent++
		}
	}
	switch sent {
	case len(ids):
		return hit, nil
	case 0:
		return nil, fmt.Errorf("mark %d intents: commit: %w (not committed: the rows read back are not SENT)", len(cs), cerr)
	}
	return nil, fmt.Errorf("mark %d intents: commit: %w (and %d of %d rows read back are SENT)", len(cs), cerr, sent, len(ids))
}

func (r *Relay) execRows(ctx context.Context, site string, tx *sql.Tx, q string, args []any) (n int64, err error) {
	var res sql.Result
	if err := r.db(site, func() (err error) { res, err = tx.ExecContext(ctx, q, args...); return err }); err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// markQuery is the batch mark's two statements for the relay's plant,
// the placeholders per claim, and the arguments (width per claim, in the
// order of the claims).
type markQuery struct {
	lock, mark string
	width      int
	args       []any
}

// markQueries returns the batch mark's statements for cs.
func (r *Relay) markQueries(cs []Claimed) markQuery {
	var q markQuery
	switch r.cfg.Plant {
	case plant.MarkWithoutToken:
		q.lock, q.mark, q.width = qMarkLockWithoutToken, qMarkRowsWithoutToken, 1
	case plant.MarkCASClaimIDOnly:
		q.lock, q.mark, q.width = qMarkLockClaimIDOnly, qMarkRowsClaimIDOnly, 2
	default:
		q.lock, q.mark, q.width = qMarkLock, qMarkRows, 3
	}
	q.args = make([]any, 0, q.width*len(cs))
	for _, c := range cs {
		switch q.width {
		case 1:
			q.args = append(q.args, c.ID)
		case 2:
			q.args = append(q.args, c.ID, c.ClaimID)
		default:
			q.args = append(q.args, c.ID, c.ClaimVersion, c.ClaimID)
		}
	}
	return q
}

// lockedIDs runs a locking select of ids.
func (r *Relay) lockedIDs(ctx context.Context, site string, tx *sql.Tx, q string, args []any) (map[int64]bool, error) {
	var rows *sql.Rows
	if err := r.db(site, func() (err error) { rows, err = tx.QueryContext(ctx, q, args...); return err }); err != nil {
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
