package consumer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// ErrEffectFailed wraps the error of an effect transaction that did not
// commit: a statement or the COMMIT was answered with an error (the
// transaction rolled back as a whole: effect_rolled_back), or the COMMIT
// went unanswered (commit_unknown). The record is not settled and its
// offset is not committed; PollOnce rewinds its partition to it, so that
// the next poll replays it and the inbox decides.
var ErrEffectFailed = errors.New("effect transaction failed")

// txFailure is an effect transaction that began and did not commit.
type txFailure struct {
	err     error
	unknown bool // the COMMIT got no answer: it may have committed
}

func (f *txFailure) Error() string { return f.err.Error() }
func (f *txFailure) Unwrap() error { return f.err }

// txResult is what a committed (or rejected) effect transaction did.
type txResult struct {
	replay         bool   // the inbox rejected the record: a duplicate
	key            string // the inbox row's event_id column
	notificationID int64
	trx            string // the database transaction that wrote the rows ("" when unknown)
	splitTrx       string // the planted InboxAndEffectSeparateTx: the inbox row's own transaction
}

// effect runs the effect transaction and emits its events: inbox_insert
// and effect after the commit, inbox_reject after a duplicate's rollback,
// effect_rolled_back or commit_unknown after a failure (then the error
// wraps ErrEffectFailed).
func (c *Consumer) effect(ctx context.Context, r *kgo.Record, id Identity) (replay bool, notificationID int64, err error) {
	res, err := c.effectTx(ctx, r, id)
	at := evidence.Event{
		EventID:   id.EventID,
		Consumer:  c.cfg.Name,
		Topic:     r.Topic,
		Partition: evidence.Ptr(r.Partition),
		Offset:    evidence.Ptr(r.Offset),
	}
	var failed *txFailure
	switch {
	case errors.As(err, &failed):
		return false, 0, c.effectFailed(at, failed)
	case err != nil:
		return false, 0, err
	case res.replay:
		c.count(func(s *Stats) { s.InboxRejected++ })
		at.Kind, at.InboxKey = evidence.KindInboxReject, res.key
		return true, 0, c.emit(at)
	}
	if c.cfg.Plant != plant.NoInboxDedupe {
		c.count(func(s *Stats) { s.InboxInserted++ })
		at.Kind, at.InboxKey, at.TrxID = evidence.KindInboxInsert, res.key, res.inboxTrx()
		if err := c.emit(at); err != nil {
			return false, res.notificationID, err
		}
	}
	c.count(func(s *Stats) { s.Effects++ })
	return false, res.notificationID, c.emit(evidence.Event{
		Kind:           evidence.KindEffect,
		EventID:        id.EventID,
		OrderID:        evidence.Ptr(id.OrderID),
		NotificationID: evidence.Ptr(res.notificationID),
		Consumer:       c.cfg.Name,
		TrxID:          res.trx,
	})
}

// effectFailed records a transaction that did not commit and returns the
// error wrapping ErrEffectFailed.
func (c *Consumer) effectFailed(at evidence.Event, f *txFailure) error {
	at.Kind, at.Err = evidence.KindEffectRolledBack, f.err.Error()
	if f.unknown {
		at.Kind = evidence.KindCommitUnknown
		c.count(func(s *Stats) { s.CommitsUnknown++ })
	} else {
		c.count(func(s *Stats) { s.EffectsRolledBack++ })
	}
	if err := c.emit(at); err != nil {
		return fmt.Errorf("%w: %s: %w (and recording it failed: %v)", ErrEffectFailed, at.EventID, f.err, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrEffectFailed, at.EventID, f.err)
}

// effectTx inserts the inbox row and the notification in one transaction
// on a connection of its own, and after the commit reads the
// transaction's id on it. A duplicate inbox key is a replay: the
// transaction is rolled back explicitly (MariaDB keeps a transaction open
// after a failed statement). Before the COMMIT it passes
// EffectCommitKilled (where a scenario kills its connection).
func (c *Consumer) effectTx(ctx context.Context, r *kgo.Record, id Identity) (res txResult, err error) {
	res.key = c.inboxKey(r, id)
	var conn *sql.Conn
	if err := c.db("consumer.effect.conn", func() (err error) { conn, err = c.cfg.DB.Conn(ctx); return err }); err != nil {
		return res, fmt.Errorf("effect %s: connection: %w", id.EventID, err)
	}
	defer conn.Close()
	var tx *sql.Tx
	if err := c.db("consumer.effect.begin", func() (err error) { tx, err = conn.BeginTx(ctx, nil); return err }); err != nil {
		return res, fmt.Errorf("effect %s: begin: %w", id.EventID, err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback()
		}
	}()
	if c.cfg.Plant == plant.InboxByEventID {
		if res.replay, err = c.inboxHasEvent(ctx, tx, res.key); err != nil || res.replay {
			return res, err
		}
	}
	if c.cfg.Plant != plant.NoInboxDedupe {
		if err := c.db("consumer.effect.inbox", func() error {
			_, err := tx.ExecContext(ctx, qInsertInbox, c.cfg.Name, res.key, r.Topic, r.Partition, r.Offset)
			return err
		}); err != nil {
			var me *mysql.MySQLError
			if errors.As(err, &me) && me.Number == mysqlDuplicateKey {
				res.replay = true
				return res, nil
			}
			return res, &txFailure{err: fmt.Errorf("effect %s: insert inbox: %w", id.EventID, err)}
		}
	}
	if c.cfg.Plant == plant.InboxAndEffectSeparateTx {
		if tx, err = c.splitTx(ctx, conn, tx, &res, id); err != nil {
			return res, err
		}
	}
	body := evidence.NotificationBody(id.OrderID, id.EventID)
	var rs sql.Result
	if err := c.db("consumer.effect.notification", func() (err error) {
		rs, err = tx.ExecContext(ctx, qInsertNotification, c.cfg.Name, id.EventID, id.OrderID, body)
		return err
	}); err != nil {
		return res, &txFailure{err: fmt.Errorf("effect %s: insert notification: %w", id.EventID, err)}
	}
	if res.notificationID, err = rs.LastInsertId(); err != nil {
		return res, &txFailure{err: fmt.Errorf("effect %s: notification id: %w", id.EventID, err)}
	}
	if err := c.cfg.Faults.Hit(spec.EffectCommitKilled); err != nil {
		return res, fmt.Errorf("effect %s: %w", id.EventID, err)
	}
	committed = true
	if err := c.commit("consumer.effect.commit", tx); err != nil {
		return res, &txFailure{err: fmt.Errorf("effect %s: commit: %w", id.EventID, err), unknown: connectionLost(err)}
	}
	res.trx = c.lastTrx(ctx, conn)
	return res, nil
}

// inboxKey is the event_id column of the record's inbox row: its event
// id (the planted DedupeOnWrongKey takes the record key, the order id).
func (c *Consumer) inboxKey(r *kgo.Record, id Identity) string {
	if c.cfg.Plant == plant.DedupeOnWrongKey && len(r.Key) > 0 {
		return string(r.Key)
	}
	return id.EventID
}

// inboxHasEvent is the planted InboxByEventID: it looks the inbox up by
// event id alone, so that another consumer's row of the event is taken
// for a replay of this one's.
func (c *Consumer) inboxHasEvent(ctx context.Context, tx *sql.Tx, eventID string) (bool, error) {
	var n int64
	if err := c.db("consumer.effect.inbox-by-event", func() error {
		return tx.QueryRowContext(ctx, qInboxByEvent, eventID).Scan(&n)
	}); err != nil {
		return false, &txFailure{err: fmt.Errorf("effect %s: look the inbox up: %w", eventID, err)}
	}
	return n > 0, nil
}

// splitTx is the planted InboxAndEffectSeparateTx: it commits the inbox
// row on its own and begins a second transaction for the notification.
func (c *Consumer) splitTx(ctx context.Context, conn *sql.Conn, tx *sql.Tx, res *txResult, id Identity) (*sql.Tx, error) {
	if err := c.commit("consumer.split.commit", tx); err != nil {
		return nil, &txFailure{err: fmt.Errorf("effect %s: commit inbox: %w", id.EventID, err), unknown: connectionLost(err)}
	}
	res.splitTrx = c.lastTrx(ctx, conn)
	var tx2 *sql.Tx
	if err := c.db("consumer.split.begin", func() (err error) { tx2, err = conn.BeginTx(ctx, nil); return err }); err != nil {
		return nil, fmt.Errorf("effect %s: begin: %w", id.EventID, err)
	}
	return tx2, nil
}

// inboxTrx is the transaction that wrote the inbox row.
func (r txResult) inboxTrx() string {
	if r.splitTrx != "" {
		return r.splitTrx
	}
	return r.trx
}

// lastTrx returns the global id of the last transaction conn committed,
// as the database logs it (MariaDB's GTID, which the binlog witness
// holds), or "" when the server has none (no binary log, MySQL): the
// transaction that wrote the rows, recorded so that the verifier can tell
// one transaction from two.
func (c *Consumer) lastTrx(ctx context.Context, conn *sql.Conn) string {
	var id sql.NullString
	if err := c.db("consumer.effect.trx-id", func() error { return conn.QueryRowContext(ctx, qLastTrx).Scan(&id) }); err != nil {
		return ""
	}
	return id.String
}

// connectionLost tells whether a COMMIT's error leaves its outcome
// unknown: no answer from the server (a lost or killed connection, a
// context that ended while waiting) rather than an error it answered
// (a deadlock or a constraint: rolled back).
func connectionLost(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == mysqlConnectionKilled || me.Number == mysqlServerShutdown
	}
	return true
}
