package relay

// The relay's SQL, in one place. Every lease comparison uses the database
// clock (NOW(6)); connections run with time_zone '+00:00', so DATETIME(6)
// values are UTC.
const (
	// qClaimDue selects due intents and locks them, skipping rows another
	// relay holds: PENDING, or CLAIMED with an expired lease.
	qClaimDue = `SELECT id, event_id, aggregate_id, aggregate_version, payload, state
FROM outbox
WHERE state = 'PENDING' OR (state = 'CLAIMED' AND lease_until < NOW(6))
ORDER BY id
LIMIT ?
FOR UPDATE SKIP LOCKED`

	// qClaimAnyUnlocked is the planted bug ClaimWithoutLock: a plain
	// (snapshot, non-locking) read of every row not yet SENT, live lease or
	// not.
	qClaimAnyUnlocked = `SELECT id, event_id, aggregate_id, aggregate_version, payload, state
FROM outbox
WHERE state <> 'SENT'
ORDER BY id
LIMIT ?`

	// qClaimRow takes one row: a new token (claim_version + 1, our
	// claim_id) and a lease measured on the database clock.
	qClaimRow = `UPDATE outbox
SET state = 'CLAIMED', claim_version = claim_version + 1, claim_id = ?,
    lease_until = NOW(6) + INTERVAL ? MICROSECOND
WHERE id = ?`

	// qClaimReadBack reads the token and lease just written, inside the
	// claiming transaction (our own write, under our row lock).
	qClaimReadBack = `SELECT claim_version, claim_id, lease_until FROM outbox WHERE id = ?`

	// qMark is the compare-and-set to SENT on the whole token. The driver
	// reports changed rows (clientFoundRows off, its default); a matched
	// row always changes here because state goes from CLAIMED to SENT, so
	// changed = matched and 0 means exactly "the token is no longer ours".
	qMark = `UPDATE outbox SET state = 'SENT', sent_at = NOW(6)
WHERE event_id = ? AND claim_version = ? AND claim_id = ? AND state = 'CLAIMED'`

	// qMarkWithoutToken is the planted bug MarkWithoutToken: no token and
	// no state check.
	qMarkWithoutToken = `UPDATE outbox SET state = 'SENT', sent_at = NOW(6) WHERE event_id = ?`

	// qExpireLease ages a live lease by SQL, as the clock would after the
	// holder died.
	qExpireLease = `UPDATE outbox SET lease_until = NOW(6) - INTERVAL 1 SECOND
WHERE event_id = ? AND state = 'CLAIMED'`
)
