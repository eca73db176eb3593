package consumer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
)

// db runs the database call do at site through the call hook (the sweep
// fails it there; fault.Call).
func (c *Consumer) db(site string, do func() error) error {
	return c.cfg.Faults.Call(fault.DB, site, do)
}

// broker runs the broker call do at site through the call hook.
func (c *Consumer) broker(site string, do func() error) error {
	return c.cfg.Faults.Call(fault.Broker, site, do)
}

// commit commits tx through the call hook at site. A COMMIT that failed
// ended the transaction (the server rolled it back, or the connection is
// gone); so does one the hook failed before it was sent: tx is rolled
// back then, as the server would have.
func (c *Consumer) commit(site string, tx *sql.Tx) error {
	err := c.db(site, tx.Commit)
	if err != nil {
		_ = tx.Rollback() // sql.ErrTxDone after a COMMIT that was sent
	}
	return err
}

// ErrOffsetCommitFailed wraps the error of an offset commit the broker
// refused or left unanswered. The record is settled (its effect committed
// or its replay rejected) and its offset may or may not be committed:
// PollOnce rewinds its partition to it, so that the next poll replays it,
// the inbox rejects it, and its offset is committed again.
var ErrOffsetCommitFailed = errors.New("offset commit failed")

// The outcomes a failed call's record (callFailed) names.
const (
	// OutcomeAnswered: the server or the broker answered with an error:
	// the call did not take effect.
	OutcomeAnswered = "answered"
	// OutcomeUnknown: no answer (a lost connection, a timeout): the call
	// may have taken effect.
	OutcomeUnknown = "unknown"
)

// brokerOutcome reads a broker call's error: a Kafka error code is the
// broker's answer; anything else left the outcome unknown.
func brokerOutcome(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) && ke != kerr.RequestTimedOut {
		return OutcomeAnswered
	}
	return OutcomeUnknown
}

// callFailed records, in the consumer's own log, a broker call at site
// that failed with err: a call_failed event naming the site and the
// outcome the consumer reads from err.
func (c *Consumer) callFailed(site string, err error) error {
	outcome := brokerOutcome(err)
	return c.emit(evidence.Event{
		Kind: evidence.KindCallFailed, Target: site, Reason: outcome, Err: err.Error(),
		Detail: fmt.Sprintf("consumer %s: %s failed (%s): %v", c.cfg.Member, site, outcome, err),
	})
}

// commitFailed records a failed offset commit of recs and returns
// ErrOffsetCommitFailed wrapping err (and the recording's error).
func (c *Consumer) commitFailed(recs []*kgo.Record, err error) error {
	r := recs[len(recs)-1]
	err = fmt.Errorf("consumer %s: commit offset %s/%d@%d: %w: %w", c.cfg.Member, r.Topic, r.Partition, r.Offset+1, ErrOffsetCommitFailed, err)
	if lerr := c.callFailed("consumer.offset.commit", err); lerr != nil {
		return fmt.Errorf("%w (and recording it failed: %v)", err, lerr)
	}
	return err
}

// pollFetches polls through the call hook (site consumer.fetch); an error
// the hook returns is the fetch's error, beside the fetches' own.
func (c *Consumer) pollFetches(ctx context.Context) (kgo.Fetches, error) {
	var fs kgo.Fetches
	err := c.broker("consumer.fetch", func() error { fs = c.cl.PollFetches(ctx); return nil })
	return fs, err
}
