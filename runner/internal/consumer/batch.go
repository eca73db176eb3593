package consumer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// handleBatch is Config.BatchEffects: the records of one poll settled in
// one effect transaction and their offsets in one commit, every event
// still one per record.
//
//  1. receive each record (a record whose identity does not parse: the
//     whole batch goes one by one, handleEach, which stops at it);
//  2. one transaction inserts every inbox row (one multi-row statement; on
//     a duplicate key, which rolls back only that statement, one statement
//     per row, so that each duplicate is a replay of its own), the
//     notifications of the others (one multi-row statement, their ids read
//     back), and commits;
//  3. inbox_insert and effect, or inbox_reject, for each record, in order;
//  4. AfterEffectBeforeOffsetCommit once per record;
//  5. one offset commit of every partition's last record + 1, and an
//     offset_commit event per partition.
//
// (The planted BatchOffsetBeforeEffect does step 5 between 1 and 2.)
//
// A statement that fails otherwise, or a COMMIT answered with an error,
// rolls the batch back, and the records are settled one by one (settle),
// so that one record's failure stays its own. A COMMIT without an answer
// (the batch may have committed) is a commit_unknown for every record;
// their partitions are rewound, and the replays meet the inbox.
func (c *Consumer) handleBatch(ctx context.Context, recs []*kgo.Record) error {
	ids := make([]Identity, len(recs))
	for i, r := range recs {
		id, err := ParseIdentity(r)
		if err != nil {
			return c.handleEach(ctx, recs)
		}
		ids[i] = id
	}
	for _, r := range recs {
		if _, err := c.receive(r); err != nil {
			return err
		}
	}
	if c.cfg.Plant == plant.BatchOffsetBeforeEffect {
		if err := c.commitBatch(ctx, recs); err != nil {
			return err
		}
	}
	res, err := c.batchTx(ctx, recs, ids)
	var failed *txFailure
	switch {
	case errors.As(err, &failed) && failed.unknown:
		return c.batchUnknown(ctx, recs, ids, failed)
	case errors.As(err, &failed):
		i := 0
		return c.each(ctx, recs, func(r *kgo.Record) error {
			_, err := c.settle(ctx, r, ids[i])
			i++
			return err
		})
	case err != nil:
		return err
	}
	if err := c.batchEvents(recs, ids, res); err != nil {
		return err
	}
	if err := c.cfg.Log.Flush(); err != nil {
		return fmt.Errorf("consumer %s: %w", c.cfg.Member, err)
	}
	for i, r := range recs {
		if err := c.hit(r, ids[i]); err != nil {
			return err
		}
	}
	if c.cfg.Plant == plant.BatchOffsetBeforeEffect {
		return nil // committed before the transaction
	}
	if err := c.commitBatch(ctx, recs); err != nil {
		return c.replayFrom(ctx, recs, err)
	}
	return nil
}

// batchResult is what a committed batch transaction did, per record.
type batchResult struct {
	replay         []bool
	notificationID []int64
	trx            string
}

// batchTx runs the batch's effect transaction on a connection of its own.
// Its failures are *txFailure (the batch did not commit, or may have).
func (c *Consumer) batchTx(ctx context.Context, recs []*kgo.Record, ids []Identity) (res batchResult, err error) {
	var conn *sql.Conn
	if err := c.db("consumer.batch.conn", func() (err error) { conn, err = c.cfg.DB.Conn(ctx); return err }); err != nil {
		return res, fmt.Errorf("effect batch: connection: %w", err)
	}
	defer conn.Close()
	var tx *sql.Tx
	if err := c.db("consumer.batch.begin", func() (err error) { tx, err = conn.BeginTx(ctx, nil); return err }); err != nil {
		return res, fmt.Errorf("effect batch: begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback()
		}
	}()
	if res.replay, err = c.insertInbox(ctx, tx, recs, ids); err != nil {
		return res, &txFailure{err: fmt.Errorf("effect batch: insert inbox: %w", err)}
	}
	if res.notificationID, err = c.insertNotifications(ctx, tx, ids, res.replay); err != nil {
		return res, &txFailure{err: fmt.Errorf("effect batch: insert notifications: %w", err)}
	}
	if err := c.cfg.Faults.Hit(spec.EffectCommitKilled); err != nil {
		return res, fmt.Errorf("effect batch: %w", err)
	}
	committed = true
	if err := c.commit("consumer.batch.commit", tx); err != nil {
		return res, &txFailure{err: fmt.Errorf("effect batch: commit: %w", err), unknown: connectionLost(err)}
	}
	res.trx = c.lastTrx(ctx, conn)
	return res, nil
}

// txLike is the batch transaction's statements (*sql.Tx).
type txLike interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// insertInbox inserts the inbox row of every record and says which were
// replays (duplicate keys).
func (c *Consumer) insertInbox(ctx context.Context, tx txLike, recs []*kgo.Record, ids []Identity) ([]bool, error) {
	replay := make([]bool, len(recs))
	args := make([]any, 0, 5*len(recs))
	for i, r := range recs {
		args = append(args, c.cfg.Name, ids[i].EventID, r.Topic, r.Partition, r.Offset)
	}
	err := c.db("consumer.batch.inbox", func() error {
		_, err := tx.ExecContext(ctx, qInsertInboxRows+rowsOf(len(recs), 5), args...)
		return err
	})
	if !isDuplicate(err) {
		return replay, err
	}
	for i := range recs {
		err := c.db("consumer.batch.inbox-one", func() error {
			_, err := tx.ExecContext(ctx, qInsertInbox, args[5*i:5*i+5]...)
			return err
		})
		switch {
		case isDuplicate(err):
			replay[i] = true
		case err != nil:
			return nil, err
		}
	}
	return replay, nil
}

// insertNotifications inserts the notification of every record that is
// not a replay and returns their ids (0 for a replay), read back in the
// transaction.
func (c *Consumer) insertNotifications(ctx context.Context, tx txLike, ids []Identity, replay []bool) ([]int64, error) {
	var args, events []any
	for i, id := range ids {
		if !replay[i] {
			args = append(args, c.cfg.Name, id.EventID, id.OrderID, evidence.NotificationBody(id.OrderID, id.EventID))
			events = append(events, id.EventID)
		}
	}
	out := make([]int64, len(ids))
	if len(events) == 0 {
		return out, nil
	}
	var rs sql.Result
	if err := c.db("consumer.batch.notification", func() (err error) {
		rs, err = tx.ExecContext(ctx, qInsertNotificationRows+rowsOf(len(events), 4), args...)
		return err
	}); err != nil {
		return nil, err
	}
	first, err := rs.LastInsertId()
	if err != nil {
		return nil, err
	}
	byEvent, err := c.notificationIDs(ctx, tx, c.cfg.Name, first, events)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if !replay[i] {
			out[i] = byEvent[id.EventID]
		}
	}
	return out, nil
}

// notificationIDs reads back the ids of the notifications of events
// inserted at or after id first, one per event.
func (c *Consumer) notificationIDs(ctx context.Context, tx txLike, name string, first int64, events []any) (map[string]int64, error) {
	var rows *sql.Rows
	if err := c.db("consumer.batch.notification-ids", func() (err error) {
		rows, err = tx.QueryContext(ctx, qNotificationIDs+"("+strings.TrimSuffix(strings.Repeat("?, ", len(events)), ", ")+")",
			append([]any{first, name}, events...)...)
		return err
	}); err != nil {
		return nil, err
	}
	defer rows.Close()
	byEvent := make(map[string]int64, len(events))
	for rows.Next() {
		var id int64
		var ev string
		if err := rows.Scan(&id, &ev); err != nil {
			return nil, err
		}
		if _, dup := byEvent[ev]; dup {
			return nil, fmt.Errorf("two notifications of %s in one batch", ev)
		}
		byEvent[ev] = id
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(byEvent) != len(events) {
		return nil, fmt.Errorf("read back %d notification ids for %d inserted", len(byEvent), len(events))
	}
	return byEvent, nil
}

// rowsOf returns n groups of width placeholders: "(?, ?), (?, ?)".
func rowsOf(n, width int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}

func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == mysqlDuplicateKey
}

// batchEvents counts and emits, after the commit, each record's
// inbox_insert and effect, or its inbox_reject.
func (c *Consumer) batchEvents(recs []*kgo.Record, ids []Identity, res batchResult) error {
	for i, r := range recs {
		at := evidence.Event{
			EventID: ids[i].EventID, Consumer: c.cfg.Name, Topic: r.Topic,
			Partition: evidence.Ptr(r.Partition), Offset: evidence.Ptr(r.Offset), InboxKey: ids[i].EventID,
		}
		if res.replay[i] {
			c.count(func(s *Stats) { s.InboxRejected++ })
			at.Kind = evidence.KindInboxReject
			if err := c.emit(at); err != nil {
				return err
			}
			continue
		}
		c.count(func(s *Stats) { s.InboxInserted++; s.Effects++ })
		at.Kind, at.TrxID = evidence.KindInboxInsert, res.trx
		if err := c.emit(at); err != nil {
			return err
		}
		if err := c.emit(evidence.Event{
			Kind: evidence.KindEffect, EventID: ids[i].EventID, OrderID: evidence.Ptr(ids[i].OrderID),
			NotificationID: evidence.Ptr(res.notificationID[i]), Consumer: c.cfg.Name, TrxID: res.trx,
		}); err != nil {
			return err
		}
	}
	return nil
}

// batchUnknown records a batch whose COMMIT went unanswered: a
// commit_unknown per record; their partitions are rewound for a replay.
func (c *Consumer) batchUnknown(ctx context.Context, recs []*kgo.Record, ids []Identity, f *txFailure) error {
	for i, r := range recs {
		at := evidence.Event{
			EventID: ids[i].EventID, Consumer: c.cfg.Name, Topic: r.Topic,
			Partition: evidence.Ptr(r.Partition), Offset: evidence.Ptr(r.Offset),
		}
		_ = c.effectFailed(at, f) // wraps ErrEffectFailed; a failure to record it sticks to the log
	}
	if err := c.cfg.Log.Flush(); err != nil {
		return fmt.Errorf("consumer %s: record commit_unknown: %w", c.cfg.Member, err)
	}
	c.rewind(recs)
	c.backoff(ctx)
	return errRewound
}

// commitBatch commits the offset after the last record of every
// partition of recs in one request, and emits an offset_commit per
// partition.
func (c *Consumer) commitBatch(ctx context.Context, recs []*kgo.Record) error {
	if err := c.broker("consumer.offset.commit", func() error { return c.cl.CommitRecords(ctx, recs...) }); err != nil {
		return c.commitFailed(recs, err)
	}
	type tp struct {
		topic string
		part  int32
	}
	next := map[tp]int64{}
	var order []tp
	for _, r := range recs {
		k := tp{r.Topic, r.Partition}
		if _, ok := next[k]; !ok {
			order = append(order, k)
		}
		next[k] = max(next[k], r.Offset+1)
	}
	for _, k := range order {
		c.count(func(s *Stats) { s.OffsetsCommitted++ })
		c.settled(k.topic, k.part, next[k])
		if err := c.emit(evidence.Event{
			Kind: evidence.KindOffsetCommit, Topic: k.topic, Partition: evidence.Ptr(k.part),
			Offset: evidence.Ptr(next[k]), Consumer: c.cfg.Group,
		}); err != nil {
			return err
		}
	}
	return nil
}
