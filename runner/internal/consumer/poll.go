package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
)

// RetryBackoff is how long PollOnce waits after an effect transaction
// failed, before the next poll replays the record.
const RetryBackoff = 20 * time.Millisecond

// PollOnce polls one batch of records (waiting until records arrive or ctx
// ends) and handles each in offset order; no rebalance takes this
// member's partitions from it until the batch is done. It returns what
// this call did.
// An effect transaction that did not commit (ErrEffectFailed), or an
// offset commit that failed (ErrOffsetCommitFailed), stops the
// batch: every partition with records left unhandled is rewound to its
// first one, so that the next poll replays them, and PollOnce returns
// without an error after RetryBackoff. A failed fetch (the client's or
// the call hook's) is recorded (a fault event at call-failed) and
// returned after the records polled with it were handled. Any other error (a simulated crash,
// a bad record, a database or commit error) stops it with the rest of the
// batch unhandled. When ctx ends it returns ctx.Err(). (The planted
// BatchOutOfOrder handles a batch last record first.)
func (c *Consumer) PollOnce(ctx context.Context) (Stats, error) {
	before := c.Stats()
	fs, herr := c.pollFetches(ctx)
	defer c.cl.AllowRebalance() // the client blocks rebalances from the poll on (New)
	if fs.IsClientClosed() {
		return Stats{}, fmt.Errorf("consumer %s: %w", c.cfg.Member, ErrClosed)
	}
	var ferr error
	if herr != nil {
		ferr = fmt.Errorf("consumer %s: fetch: %w", c.cfg.Member, herr)
	}
	fs.EachError(func(topic string, part int32, err error) {
		if ferr == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			ferr = fmt.Errorf("consumer %s: fetch %s/%d: %w", c.cfg.Member, topic, part, err)
		}
	})
	recs := fs.Records()
	if c.cfg.Plant == plant.BatchOutOfOrder {
		slices.Reverse(recs)
	}
	handle := c.handleEach
	if c.cfg.BatchEffects && len(recs) > 1 {
		handle = c.handleBatch
	}
	if err := handle(ctx, recs); errors.Is(err, errRewound) {
		return c.Stats().sub(before), ctx.Err()
	} else if err != nil {
		return c.Stats().sub(before), err
	}
	if ferr != nil {
		if err := c.callFailed("consumer.fetch", ferr); err != nil {
			return c.Stats().sub(before), fmt.Errorf("%w (and recording it failed: %v)", ferr, err)
		}
		return c.Stats().sub(before), ferr
	}
	if err := ctx.Err(); err != nil {
		return c.Stats().sub(before), err
	}
	return c.Stats().sub(before), nil
}

// errRewound: an effect transaction did not commit; the partitions of
// the records left were rewound for the next poll, after RetryBackoff.
var errRewound = errors.New("rewound after a failed effect transaction")

// handleEach handles recs one by one (Handle). An effect transaction that
// did not commit stops it: the partitions of the records left are rewound
// and it returns errRewound after RetryBackoff; any other error stops it
// and is returned.
func (c *Consumer) handleEach(ctx context.Context, recs []*kgo.Record) error {
	return c.each(ctx, recs, func(r *kgo.Record) error {
		_, err := c.Handle(ctx, r)
		return err
	})
}

// each calls handle for each record of recs in order, stopping as
// handleEach says.
func (c *Consumer) each(ctx context.Context, recs []*kgo.Record, handle func(*kgo.Record) error) error {
	for i, r := range recs {
		if err := handle(r); err != nil {
			return c.replayFrom(ctx, recs[i:], err)
		}
	}
	return nil
}

// replayFrom handles err, the failure of the first record of rest: an
// effect transaction that did not commit (ErrEffectFailed) or an offset
// commit that failed (ErrOffsetCommitFailed) rewinds the partitions of
// rest for the next poll and returns errRewound after RetryBackoff; any
// other error is returned as it is.
func (c *Consumer) replayFrom(ctx context.Context, rest []*kgo.Record, err error) error {
	if !errors.Is(err, ErrEffectFailed) && !errors.Is(err, ErrOffsetCommitFailed) {
		return err
	}
	c.rewind(rest)
	c.backoff(ctx)
	return errRewound
}

// backoff waits RetryBackoff or until ctx ends.
func (c *Consumer) backoff(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(RetryBackoff):
	}
}

// rewind sets each partition of rest to its first record in rest: the
// next fetch starts there.
func (c *Consumer) rewind(rest []*kgo.Record) {
	to := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range rest {
		if to[r.Topic] == nil {
			to[r.Topic] = map[int32]kgo.EpochOffset{}
		}
		if cur, ok := to[r.Topic][r.Partition]; !ok || r.Offset < cur.Offset {
			to[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset}
		}
	}
	c.cl.SetOffsets(to)
}

// PollUntil polls until done(Stats()) holds, and returns the total stats.
// Give ctx a deadline: when it ends first the error wraps ctx.Err().
func (c *Consumer) PollUntil(ctx context.Context, done func(Stats) bool) (Stats, error) {
	for {
		if s := c.Stats(); done(s) {
			return s, nil
		}
		if _, err := c.PollOnce(ctx); err != nil {
			return c.Stats(), fmt.Errorf("consumer %s: poll until: %w", c.cfg.Member, err)
		}
	}
}

// Run polls and handles records until ctx ends (then it returns nil) or an
// error occurs.
func (c *Consumer) Run(ctx context.Context) error {
	for {
		if _, err := c.PollOnce(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// LeaveTimeout bounds how long Close waits for the broker to confirm that
// the member left its group: kgo's own Close waits for that with retries
// (about 30 s against a broker that stopped answering).
const LeaveTimeout = 2 * time.Second

// Close leaves the group (waiting at most LeaveTimeout) and closes the
// client. Uncommitted offsets stay uncommitted (autocommit is off), as
// after a crash: the next member replays from the last committed offset.
func (c *Consumer) Close() {
	c.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), LeaveTimeout)
		defer cancel()
		c.cl.AllowRebalance()           // leaving is a rebalance: a batch left unfinished must not block it
		_ = c.cl.LeaveGroupContext(ctx) // a broker that is gone: the group times the member out
		c.cl.Close()
	})
}
