package relay

// The relay's SQL, in one place. Every lease comparison uses the database
// clock (NOW(6)); connections run with time_zone '+00:00', so DATETIME(6)
// values are UTC.
//
// The claim reads due intents in two branches, one per state, each served
// in index order by idx_outbox_due (state, lease_until, id): equality on
// state, then lease_until and id in index order, so that the server reads
// rows in the order it returns them and stops at the LIMIT. That is what
// makes SKIP LOCKED skip: a locking read locks every row it reads, and a
// single query over both states (state = 'PENDING' OR (state = 'CLAIMED'
// AND ...) ORDER BY id) reads every candidate row into a filesort first,
// so the first relay locked all of them and a second relay running at the
// same moment found none. FORCE INDEX keeps that access path whatever the
// table's statistics say (on a small table the optimizer may prefer a scan
// and a sort); TestClaimUsesIndex checks it with EXPLAIN and the handler
// counters.
const (
	// qClaimExpired selects CLAIMED intents whose lease ran out on the
	// database clock, oldest lease first, skipping rows another relay is
	// claiming right now: the takeovers.
	qClaimExpired = `SELECT id, event_id, aggregate_id, aggregate_version, payload, state
FROM outbox FORCE INDEX (idx_outbox_due)
WHERE state = 'CLAIMED' AND lease_until < NOW(6)` + inVersionOrder + `
ORDER BY lease_until, id
LIMIT ?
FOR UPDATE SKIP LOCKED`

	// qClaimPending selects PENDING intents in id order (their lease_until
	// is NULL), skipping rows another relay is claiming right now.
	qClaimPending = `SELECT id, event_id, aggregate_id, aggregate_version, payload, state
FROM outbox FORCE INDEX (idx_outbox_due)
WHERE state = 'PENDING'` + inVersionOrder + `
ORDER BY lease_until, id
LIMIT ?
FOR UPDATE SKIP LOCKED`

	// inVersionOrder keeps a claim to the first unsent version of each
	// aggregate: an intent whose aggregate has an earlier version not yet
	// SENT waits for it, so that the broker receives an aggregate's
	// versions in order even when an earlier one's publish failed and
	// waits out its lease (versionsAfterRefusal). The subquery is a plain
	// read of the latest committed rows (the claim runs at READ
	// COMMITTED; a locking clause does not reach into a subquery), served
	// by idx_outbox_aggregate: an earlier version being claimed right now
	// by another relay is PENDING or CLAIMED there, unsent either way.
	inVersionOrder = `
  AND NOT EXISTS (SELECT 1 FROM outbox AS earlier FORCE INDEX (idx_outbox_aggregate)
                  WHERE earlier.aggregate_id = outbox.aggregate_id
                    AND earlier.aggregate_version < outbox.aggregate_version
                    AND earlier.state <> 'SENT')`

	// qClaimRows takes the rows the claim's select locked (%s: their ids,
	// an IN list) in one statement: each a new token (its own
	// claim_version + 1, our claim_id) and a fresh lease measured on the
	// database clock.
	qClaimRows = `UPDATE outbox FORCE INDEX (PRIMARY)
SET state = 'CLAIMED', claim_version = claim_version + 1, claim_id = ?,
    lease_until = NOW(6) + INTERVAL ? MICROSECOND
WHERE id IN (%s)`

	// qClaimReadBack reads the tokens and leases just written (%s: the
	// ids), inside the claiming transaction (our own writes, under our
	// row locks).
	qClaimReadBack = `SELECT id, claim_version, claim_id, lease_until, state
FROM outbox FORCE INDEX (PRIMARY) WHERE id IN (%s)`

	// qMark is the compare-and-set to SENT on the whole token. The driver
	// reports changed rows (clientFoundRows off, its default); a matched
	// row always changes here because state goes from CLAIMED to SENT, so
	// changed = matched and 0 means exactly "the token is no longer ours".
	// Both halves are needed: claim_version tells this relay's own claims
	// apart (a relay that takes over its own expired lease keeps its
	// claim_id), claim_id tells relays apart in the evidence.
	qMark = `UPDATE outbox SET state = 'SENT', sent_at = NOW(6)
WHERE event_id = ? AND claim_version = ? AND claim_id = ? AND state = 'CLAIMED'`

	// qMarkLock is the batch mark's compare-and-set, first half (%s: one
	// (?, ?, ?) per claim): it locks, through the primary key, the rows
	// that are still CLAIMED under each claim's own token (id,
	// claim_version, claim_id), and returns them: exactly the marks that
	// will hit. Run at READ COMMITTED, it leaves no lock on a row whose
	// token is no longer ours.
	qMarkLock = `SELECT id FROM outbox FORCE INDEX (PRIMARY)
WHERE state = 'CLAIMED' AND (id, claim_version, claim_id) IN (%s)
FOR UPDATE`

	// qMarkRows is the batch mark's compare-and-set, second half, in the
	// same transaction: one statement that sets to SENT the rows
	// qMarkLock returned (%s: their (?, ?, ?) tokens), the token checked
	// again row by row.
	qMarkRows = `UPDATE outbox FORCE INDEX (PRIMARY) SET state = 'SENT', sent_at = NOW(6)
WHERE state = 'CLAIMED' AND (id, claim_version, claim_id) IN (%s)`

	// qExpireLease ages a live lease by SQL, as the clock would after the
	// holder died.
	qExpireLease = `UPDATE outbox SET lease_until = NOW(6) - INTERVAL 1 SECOND
WHERE event_id = ? AND state = 'CLAIMED'`
)

// The planted bugs' SQL (plant.Bug), each a one-line change of the query
// above it names.
const (
	// qClaimAnyUnlocked is ClaimWithoutLock, instead of both claim
	// branches: a plain (snapshot, non-locking) read of every row not yet
	// SENT, live lease or not.
	qClaimAnyUnlocked = `SELECT id, event_id, aggregate_id, aggregate_version, payload, state
FROM outbox
WHERE state <> 'SENT'
ORDER BY id
LIMIT ?`

	// qClaimExpiredAnyVersion and qClaimPendingAnyVersion are
	// PublishAheadOfVersion, instead of qClaimExpired and qClaimPending:
	// the first due intents whatever their aggregate's earlier versions.
	qClaimExpiredAnyVersion = `SELECT id, event_id, aggregate_id, aggregate_version, payload, state
FROM outbox FORCE INDEX (idx_outbox_due)
WHERE state = 'CLAIMED' AND lease_until < NOW(6)
ORDER BY lease_until, id
LIMIT ?
FOR UPDATE SKIP LOCKED`
	qClaimPendingAnyVersion = `SELECT id, event_id, aggregate_id, aggregate_version, payload, state
FROM outbox FORCE INDEX (idx_outbox_due)
WHERE state = 'PENDING'
ORDER BY lease_until, id
LIMIT ?
FOR UPDATE SKIP LOCKED`

	// qClaimAnyClaimed is ClaimIgnoresLease, instead of qClaimExpired:
	// the lease condition is gone.
	qClaimAnyClaimed = `SELECT id, event_id, aggregate_id, aggregate_version, payload, state
FROM outbox FORCE INDEX (idx_outbox_due)
WHERE state = 'CLAIMED'
ORDER BY lease_until, id
LIMIT ?
FOR UPDATE SKIP LOCKED`

	// qClaimExpiredAt is LeaseOnRelayClock, instead of qClaimExpired: the
	// relay's clock decides what has expired.
	qClaimExpiredAt = `SELECT id, event_id, aggregate_id, aggregate_version, payload, state
FROM outbox FORCE INDEX (idx_outbox_due)
WHERE state = 'CLAIMED' AND lease_until < ?
ORDER BY lease_until, id
LIMIT ?
FOR UPDATE SKIP LOCKED`

	// qClaimRowsAt is LeaseOnRelayClock, instead of qClaimRows: the
	// lease ends at the relay's clock plus the lease.
	qClaimRowsAt = `UPDATE outbox FORCE INDEX (PRIMARY)
SET state = 'CLAIMED', claim_version = claim_version + 1, claim_id = ?,
    lease_until = ?
WHERE id IN (%s)`

	// qClaimRowsKeepLease is TakeoverKeepsLease, instead of qClaimRows: a
	// row that has a lease (a takeover) keeps it.
	qClaimRowsKeepLease = `UPDATE outbox FORCE INDEX (PRIMARY)
SET state = 'CLAIMED', claim_version = claim_version + 1, claim_id = ?,
    lease_until = COALESCE(lease_until, NOW(6) + INTERVAL ? MICROSECOND)
WHERE id IN (%s)`

	// qMarkWithoutToken is MarkWithoutToken, instead of qMark: no token
	// and no state check.
	qMarkWithoutToken = `UPDATE outbox SET state = 'SENT', sent_at = NOW(6) WHERE event_id = ?`

	// qMarkClaimIDOnly is MarkCASClaimIDOnly, instead of qMark: the
	// claim_version is not compared.
	qMarkClaimIDOnly = `UPDATE outbox SET state = 'SENT', sent_at = NOW(6)
WHERE event_id = ? AND claim_id = ? AND state = 'CLAIMED'`

	// qMarkLockWithoutToken and qMarkRowsWithoutToken are
	// MarkWithoutToken in a batch mark (%s: the ids): no token and no
	// state check; every row hits (sent_at changes even on a row already
	// SENT, as with qMarkWithoutToken).
	qMarkLockWithoutToken = `SELECT id FROM outbox FORCE INDEX (PRIMARY)
WHERE id IN (%s) FOR UPDATE`
	qMarkRowsWithoutToken = `UPDATE outbox FORCE INDEX (PRIMARY) SET state = 'SENT', sent_at = NOW(6)
WHERE id IN (%s)`

	// qMarkLockClaimIDOnly and qMarkRowsClaimIDOnly are
	// MarkCASClaimIDOnly in a batch mark (%s: one (?, ?) per claim, id
	// and claim_id): the claim_version is not compared.
	qMarkLockClaimIDOnly = `SELECT id FROM outbox FORCE INDEX (PRIMARY)
WHERE state = 'CLAIMED' AND (id, claim_id) IN (%s) FOR UPDATE`
	qMarkRowsClaimIDOnly = `UPDATE outbox FORCE INDEX (PRIMARY) SET state = 'SENT', sent_at = NOW(6)
WHERE state = 'CLAIMED' AND (id, claim_id) IN (%s)`
)
