package relay

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Claimed is one intent held by this relay, with its token.
type Claimed struct {
	ID               int64 // the outbox row's primary key
	EventID          string
	OrderID          int64 // the outbox aggregate_id
	AggregateVersion int
	Payload          []byte
	ClaimVersion     int64
	ClaimID          string
	LeaseUntil       time.Time // database clock, UTC
	StateBefore      string    // PENDING, or CLAIMED for a takeover of an expired lease
}

// Claim takes up to max due intents (max <= 0 means Config.Batch) in one
// short transaction of three statements whatever max (the select of the
// due rows, one UPDATE that gives each its token, one SELECT that reads
// the tokens back) and emits one claim event per row after the commit:
// first CLAIMED rows whose lease ran out (takeovers, oldest lease first),
// then PENDING rows in id order, skipping rows another relay is claiming
// at that moment. Each row gets its own token (claim_version + 1, this
// relay's claim_id) and a lease of Config.Lease on the database clock. An
// error rolls the whole claim back; an error from the log after the commit
// returns the claims together with the error.
func (r *Relay) Claim(ctx context.Context, max int) ([]Claimed, error) {
	if max <= 0 {
		max = r.cfg.Batch
	}
	claims, err := r.claimTx(ctx, max)
	if err != nil {
		return nil, err
	}
	for _, c := range claims {
		if err := r.cfg.Log.Emit(evidence.Event{
			Actor:        r.cfg.Actor,
			Kind:         evidence.KindClaim,
			EventID:      c.EventID,
			OrderID:      evidence.Ptr(c.OrderID),
			ClaimVersion: evidence.Ptr(c.ClaimVersion),
			ClaimID:      c.ClaimID,
			LeaseUntil:   evidence.Ptr(c.LeaseUntil),
			StateBefore:  c.StateBefore,
			LeaseMS:      evidence.Ptr(r.cfg.Lease.Milliseconds()),
			Batch:        evidence.Ptr(int64(max)),
			// The round's bounds: its publish ends within the timeout
			// (spec.PublishRoundSlack), and a polling relay claims a
			// committed intent within its poll (spec.ClaimWaitSlack).
			PublishTimeoutMS: evidence.Ptr(r.publishTimeoutMS()),
			PollMS:           r.pollMS(),
		}); err != nil {
			return claims, fmt.Errorf("claim: record claim of %s: %w", c.EventID, err)
		}
	}
	return claims, nil
}

// due is a row the claim's select returned, with its primary key.
type due struct {
	id int64
	c  Claimed
}

// claimTxOptions: the claim runs at READ COMMITTED whatever the server's
// default. Its locking reads then lock the rows they return and no gaps:
// under REPEATABLE READ two relays claiming at once each lock the gap
// before the first PENDING index entry (the end of the empty expired
// range), and each one's UPDATE then waits to insert its CLAIMED entry
// into the gap the other holds, a deadlock (seen in concurrentRelays).
// The lease and state conditions are still evaluated on each row's
// latest version under its lock.
var claimTxOptions = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

func (r *Relay) claimTx(ctx context.Context, max int) (out []Claimed, err error) {
	var tx *sql.Tx
	if err := r.db("relay.claim.begin", func() (err error) { tx, err = r.cfg.DB.BeginTx(ctx, claimTxOptions); return err }); err != nil {
		return nil, fmt.Errorf("claim: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	dues, err := r.selectDue(ctx, tx, max)
	if err != nil {
		return nil, err
	}
	// A scenario may run another relay's claim here, while this one
	// holds the rows it selected (spec.ClaimLocked).
	if err := r.cfg.Faults.Hit(spec.ClaimLocked); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	if len(dues) > 0 {
		if out, err = r.claimRows(ctx, tx, dues); err != nil {
			return nil, err
		}
	}
	if err := r.commit("relay.claim.commit", tx); err != nil {
		if len(out) == 0 || !outcomeUnknown(err) {
			return nil, fmt.Errorf("claim: commit: %w", err)
		}
		return r.resolveClaim(ctx, out, err)
	}
	return out, nil
}

// resolveClaim settles a claim whose COMMIT got no answer (it may have
// committed): the tokens of its rows are read back on another connection.
// When every row holds the token this claim gave it, the claim committed
// and is returned as claimed; when none does, it rolled back and the
// COMMIT's error is returned. (A claim commits as a whole: a part cannot
// hold.)
func (r *Relay) resolveClaim(ctx context.Context, out []Claimed, cerr error) ([]Claimed, error) {
	ids := make([]any, len(out))
	for i, c := range out {
		ids[i] = c.ID
	}
	tokens, err := readTokens(ctx, r, "relay.claim.resolve", r.cfg.DB, ids)
	if err != nil {
		return nil, fmt.Errorf("claim: commit: %w (and reading the tokens back failed: %v)", cerr, err)
	}
	held := 0
	for _, c := range out {
		if t, ok := tokens[c.ID]; ok && t.ClaimVersion == c.ClaimVersion && t.ClaimID == c.ClaimID {
			held++
		}
	}
	switch held {
	case len(out):
		return out, nil
	case 0:
		return nil, fmt.Errorf("claim: commit: %w (not committed: the tokens read back are not this claim's)", cerr)
	}
	return nil, fmt.Errorf("claim: commit: %w (and %d of %d tokens read back are this claim's)", cerr, held, len(out))
}

// selectDue locks up to max due rows: the expired branch, then the
// pending branch with what is left of max.
func (r *Relay) selectDue(ctx context.Context, tx *sql.Tx, max int) ([]due, error) {
	if r.cfg.Plant == plant.ClaimWithoutLock {
		return r.queryDue(ctx, "relay.claim.select-any", tx, qClaimAnyUnlocked, max)
	}
	expired, pending, args := qClaimExpired, qClaimPending, []any{max}
	switch r.cfg.Plant {
	case plant.ClaimIgnoresLease:
		expired = qClaimAnyClaimed
	case plant.LeaseOnRelayClock:
		expired, args = qClaimExpiredAt, []any{r.cfg.Now().UTC(), max}
	case plant.PublishAheadOfVersion:
		expired, pending = qClaimExpiredAnyVersion, qClaimPendingAnyVersion
	}
	dues, err := r.queryDue(ctx, "relay.claim.select-expired", tx, expired, args...)
	if err != nil || len(dues) >= max {
		return dues, err
	}
	more, err := r.queryDue(ctx, "relay.claim.select-pending", tx, pending, max-len(dues))
	return append(dues, more...), err
}

func (r *Relay) queryDue(ctx context.Context, site string, tx *sql.Tx, q string, args ...any) ([]due, error) {
	var rows *sql.Rows
	if err := r.db(site, func() (err error) { rows, err = tx.QueryContext(ctx, q, args...); return err }); err != nil {
		return nil, fmt.Errorf("claim: select due intents: %w", err)
	}
	defer rows.Close()
	var dues []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.c.EventID, &d.c.OrderID, &d.c.AggregateVersion, &d.c.Payload, &d.c.StateBefore); err != nil {
			return nil, fmt.Errorf("claim: scan due intent: %w", err)
		}
		dues = append(dues, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: select due intents: %w", err)
	}
	return dues, nil
}

// claimRows gives every row of dues a new token and lease in one UPDATE
// and reads the tokens back in one SELECT, in the order of dues.
func (r *Relay) claimRows(ctx context.Context, tx *sql.Tx, dues []due) ([]Claimed, error) {
	ids := make([]any, len(dues))
	for i, d := range dues {
		ids[i] = d.id
	}
	q, args := qClaimRows, []any{r.cfg.ClaimID, r.cfg.Lease.Microseconds()}
	switch r.cfg.Plant {
	case plant.LeaseOnRelayClock:
		q, args = qClaimRowsAt, []any{r.cfg.ClaimID, r.cfg.Now().UTC().Add(r.cfg.Lease)}
	case plant.TakeoverKeepsLease:
		q = qClaimRowsKeepLease
	}
	var res sql.Result
	if err := r.db("relay.claim.update", func() (err error) {
		res, err = tx.ExecContext(ctx, fmt.Sprintf(q, placeholders(len(ids), 1)), append(args, ids...)...)
		return err
	}); err != nil {
		return nil, fmt.Errorf("claim %d intents: update: %w", len(dues), err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("claim %d intents: rows affected: %w", len(dues), err)
	} else if n != int64(len(dues)) {
		return nil, fmt.Errorf("claim %d intents: update changed %d rows, want %d", len(dues), n, len(dues))
	}
	tokens, err := readTokens(ctx, r, "relay.claim.read-tokens", tx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Claimed, len(dues))
	for i, d := range dues {
		tok, ok := tokens[d.id]
		if !ok {
			return nil, fmt.Errorf("claim %s: token not read back", d.c.EventID)
		}
		out[i] = d.c
		out[i].ID, out[i].ClaimVersion, out[i].ClaimID, out[i].LeaseUntil = d.id, tok.ClaimVersion, tok.ClaimID, tok.LeaseUntil.UTC()
	}
	return out, nil
}

// querier is a transaction or the pool.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// readTokens reads the tokens, leases and states (as StateBefore: the
// state now) of the rows ids, by id, through the call hook at site.
func readTokens(ctx context.Context, r *Relay, site string, tx querier, ids []any) (map[int64]Claimed, error) {
	var rows *sql.Rows
	if err := r.db(site, func() (err error) {
		rows, err = tx.QueryContext(ctx, fmt.Sprintf(qClaimReadBack, placeholders(len(ids), 1)), ids...)
		return err
	}); err != nil {
		return nil, fmt.Errorf("claim: read tokens back: %w", err)
	}
	defer rows.Close()
	tokens := make(map[int64]Claimed, len(ids))
	for rows.Next() {
		var id int64
		var c Claimed
		if err := rows.Scan(&id, &c.ClaimVersion, &c.ClaimID, &c.LeaseUntil, &c.StateBefore); err != nil {
			return nil, fmt.Errorf("claim: scan token: %w", err)
		}
		tokens[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: read tokens back: %w", err)
	}
	return tokens, nil
}

// placeholders returns n comma-separated groups of width placeholders:
// "?, ?" for width 1, "(?, ?), (?, ?)" for width 2.
func placeholders(n, width int) string {
	one := "?"
	if width > 1 {
		one = "(" + strings.Repeat("?, ", width-1) + "?)"
	}
	var b strings.Builder
	b.Grow(n * (len(one) + 2))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	return b.String()
}
