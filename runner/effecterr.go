package runner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// effectErrorRuns are the scenarios this file runs, by id (runs). Database
// errors inside the consumer's effect transaction (spec/consumer.go).
var effectErrorRuns = map[string]runFunc{
	"effectDbError": effectDbError,
	"replayCrash":   replayCrash,
}

// The trigger effectDbError puts on notification: it refuses the effect
// insert of one event id (interpolated: DDL takes no placeholders, and the
// id is checked against eventIDRE first).
const (
	refuseTrigger = "ofa_refuse_effect"
	qRefuseEffect = "CREATE TRIGGER " + refuseTrigger + ` BEFORE INSERT ON notification FOR EACH ROW
BEGIN
  IF NEW.event_id = '%s' THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'ofa: the scenario refuses this effect insert';
  END IF;
END`
	qDropRefuse = "DROP TRIGGER IF EXISTS " + refuseTrigger
	// qTxConnection finds the connection of the one open write
	// transaction in a database other than the asking connection's.
	qTxConnection = `SELECT t.trx_mysql_thread_id FROM information_schema.INNODB_TRX t
  JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
 WHERE p.DB = ? AND t.trx_mysql_thread_id <> CONNECTION_ID()`
	qConnectionAlive = `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?`
)

var eventIDRE = regexp.MustCompile(`^e-[0-9]+$`)

// effectDbError runs the scenario effectDbError of spec/consumer.go, which
// says what it does and what its metrics mean.
func effectDbError(ctx context.Context, e *Env) error {
	topic, placed, err := e.startChain(ctx, "dberr", 3)
	if err != nil {
		return err
	}
	killed, refused := placed[0].EventID, placed[1].EventID
	if err := e.refuseEffect(ctx, refused); err != nil {
		return err
	}
	if err := e.relayRound(ctx, topic); err != nil {
		return err
	}
	faults := &fault.Injector{}
	faults.ArmFunc(spec.EffectCommitKilled, 1, func() error { return e.killTxConnection(ctx, killed) })
	group := "notify-" + e.RunID
	c, err := e.Consumer(ctx, "consumer-1", topic, group, faults)
	if err != nil {
		return err
	}
	st, atFailure, err := e.untilRefused(ctx, c, refused, group, topic)
	if err != nil {
		return err
	}
	want := len(placed)
	if st, err = e.poll(ctx, c, func(s sut.ConsumerStats) bool { return s.Effects+s.InboxRejected >= want }); err != nil {
		return err
	}
	return e.measureEffectDbError(ctx, topic, group, st, atFailure)
}

// killTxConnection kills, from the scenario's own connection, the
// connection of the consumer's open effect transaction (the one write
// transaction in the scenario's database), waits until the server has
// ended it, and records the fault.
func (e *Env) killTxConnection(ctx context.Context, eventID string) error {
	id, err := e.txConnection(ctx)
	if err != nil {
		return err
	}
	if _, err := e.DB.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil {
		return fmt.Errorf("kill connection %d: %w", id, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		n, err := e.QueryInt(ctx, qConnectionAlive, id)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connection %d still there 2 s after KILL CONNECTION", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return e.Emit(evidence.Event{Kind: evidence.KindFault, Point: string(spec.EffectCommitKilled), EventID: eventID,
		Detail: fmt.Sprintf("the consumer's connection %d was killed by KILL CONNECTION from another connection after the "+
			"inbox and notification inserts of %s, before its COMMIT; the server ended it", id, eventID)})
}

// txConnection returns the connection of the one open write transaction
// in the scenario's database. InnoDB's transaction table is a cache that
// a read refreshes at most every 100 ms, so a miss is asked again.
func (e *Env) txConnection(ctx context.Context) (int64, error) {
	for range 5 {
		id, err := e.QueryInt(ctx, qTxConnection, e.Scratch.Name)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("find the consumer's connection: %w", err)
		}
		if id != 0 {
			return id, nil
		}
		time.Sleep(110 * time.Millisecond)
	}
	return 0, errors.New("find the consumer's connection: no open transaction in the scenario's database")
}

// measureEffectDbError records effectDbError's metrics: the consumer's
// failed transactions, the offset the group had committed when the
// refused record failed, the replays, the effects, and the group's lag at
// the end (both offsets as the broker has them).
func (e *Env) measureEffectDbError(ctx context.Context, topic, group string, st sut.ConsumerStats, atFailure int64) error {
	end, err := e.Kafka.EndOffset(ctx, topic)
	if err != nil {
		return err
	}
	committed, err := e.Kafka.Committed(ctx, group, topic)
	if err != nil {
		return err
	}
	effects, err := e.Count(ctx, "notification", "")
	if err != nil {
		return err
	}
	e.Result.Metric("rolledBack", st.EffectsRolledBack)
	e.Result.Metric("commitUnknown", st.CommitsUnknown)
	e.Result.Metric("committedAtFailure", atFailure)
	e.Result.Metric("replays", int64(st.Received)-end)
	e.Result.Metric("effects", effects)
	e.Result.Metric("lag", end-committed)
	return nil
}

// replayCrash runs the scenario replayCrash of spec/consumer.go, which says
// what it does and what its metrics mean.
// A consumer that commits past the failed record before its replay
// settled it (skipping it, or committing the batch it rewound) leaves
// e-2, or e-1, without its effect.
func replayCrash(ctx context.Context, e *Env) error {
	topic, placed, err := e.startChain(ctx, "rcrash", 2)
	if err != nil {
		return err
	}
	refused := placed[0].EventID
	if err := e.refuseEffect(ctx, refused); err != nil {
		return err
	}
	if err := e.relayRound(ctx, topic); err != nil {
		return err
	}
	group := "notify-" + e.RunID
	faults := &fault.Injector{}
	faults.Arm(spec.AfterEffectBeforeOffsetCommit, fault.Crash, 1)
	c1, err := e.Consumer(ctx, "consumer-1", topic, group, faults)
	if err != nil {
		return err
	}
	st, atFailure, err := e.untilRefused(ctx, c1, refused, group, topic)
	if err != nil {
		return err
	}
	if _, err := e.poll(ctx, c1, func(s sut.ConsumerStats) bool { return s.Effects >= 1 }); !errors.Is(err, fault.ErrCrash) {
		return fmt.Errorf("consumer 1 did not stop between its replayed effect and its offset commit: %v", err)
	}
	c1.Close()
	committed, err := e.Kafka.Committed(ctx, group, topic)
	if err != nil {
		return err
	}
	rs, err := e.resume(ctx, topic, group, committed)
	if err != nil {
		return err
	}
	e.Result.Metric("rolledBack", st.EffectsRolledBack)
	e.Result.Metric("committedAtFailure", atFailure)
	e.Result.Metric("resumedAt", rs.resumedAt)
	e.Result.Metric("effects", rs.effects)
	e.Result.Metric("lag", rs.lag)
	return nil
}

// refuseEffect puts the trigger on notification that refuses the effect
// insert of eventID, dropped at the end of the scenario at the latest.
func (e *Env) refuseEffect(ctx context.Context, eventID string) error {
	if !eventIDRE.MatchString(eventID) {
		return fmt.Errorf("event id %q cannot go into a trigger", eventID)
	}
	if _, err := e.DB.ExecContext(ctx, fmt.Sprintf(qRefuseEffect, eventID)); err != nil {
		return fmt.Errorf("create trigger: %w", err)
	}
	e.Defer(func() { _, _ = e.DB.ExecContext(context.WithoutCancel(ctx), qDropRefuse) })
	return nil
}

// untilRefused polls c until an effect transaction rolled back (the
// trigger refused refused's effect insert); then it reads the group's
// committed offset, drops the trigger and records the fault. It returns
// c's stats then and that offset.
func (e *Env) untilRefused(ctx context.Context, c sut.Consumer, refused, group, topic string) (sut.ConsumerStats, int64, error) {
	st, err := e.poll(ctx, c, func(s sut.ConsumerStats) bool { return s.EffectsRolledBack >= 1 })
	if err != nil {
		return st, 0, err
	}
	atFailure, err := e.Kafka.Committed(ctx, group, topic)
	if err != nil {
		return st, 0, err
	}
	if _, err := e.DB.ExecContext(ctx, qDropRefuse); err != nil {
		return st, 0, fmt.Errorf("drop trigger: %w", err)
	}
	return st, atFailure, e.Emit(evidence.Event{Kind: evidence.KindFault, Point: string(spec.EffectInsertError), EventID: refused,
		Detail: fmt.Sprintf("a trigger on notification refused the effect insert of %s after its inbox insert "+
			"(%d effect transaction(s) rolled back); the group had committed offset %d; the trigger is dropped now",
			refused, st.EffectsRolledBack, atFailure)})
}
