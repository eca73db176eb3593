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
// returned after the records polled with it were handled. When ctx ends
// inside the batch, its partitions are rewound to its first records not
// committed past (those it settled are not handled again), so
// that a member polled again does not go on past records it did not
// settle. Any other error (a simulated crash,
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
	recs := c.resumed(fs.Records())
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
		if ctx.Err() != nil {
			// The poll's time ran out inside the batch, and the member
			// may be polled again: the client's position is past
			// records it did not settle, so it goes back to the batch's
			// first it did not commit past (unsettled): going back
			// over a committed one would, when it is replayed, commit
			// an earlier offset after a later one.
			c.rewind(c.unsettled(recs))
		}
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
// next fetch starts there, and resumed holds the next poll to it.
func (c *Consumer) rewind(rest []*kgo.Record) {
	to := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range rest {
		if cur, ok := to[r.Topic][r.Partition]; !ok || r.Offset < cur.Offset {
			setOffset(to, r, r.Offset)
		}
	}
	c.mu.Lock()
	if c.resume == nil {
		c.resume = map[topicPart]int64{}
	}
	for t, ps := range to {
		for p, eo := range ps {
			c.resume[topicPart{t, p}] = eo.Offset
		}
	}
	c.mu.Unlock()
	c.cl.SetOffsets(to)
}

// resumed returns the records of recs a rewound partition may be handled
// with: from the offset it was rewound to on. A fetch that was under way
// when the partition was rewound (the connection of a fetch dropped and
// retried, say) can still deliver records past that offset; handled, they
// would be settled and committed over the records before them, which no
// member would ever settle. Such records are dropped unseen and the
// partition is rewound again. A partition the member gave up is no longer
// held (forget): the next owner resumes from the committed offset.
func (c *Consumer) resumed(recs []*kgo.Record) []*kgo.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.resume) == 0 {
		return recs
	}
	var again map[string]map[int32]kgo.EpochOffset
	out := recs[:0:0]
	for _, r := range recs {
		tp := topicPart{r.Topic, r.Partition}
		want, held := c.resume[tp]
		switch {
		case !held || r.Offset < want:
			out = append(out, r)
		case r.Offset == want:
			delete(c.resume, tp)
			out = append(out, r)
		default:
			if again == nil {
				again = map[string]map[int32]kgo.EpochOffset{}
			}
			setOffset(again, r, want)
		}
	}
	if again != nil {
		c.cl.SetOffsets(again)
	}
	return out
}

// setOffset sets r's partition in to to offset, in r's leader epoch.
func setOffset(to map[string]map[int32]kgo.EpochOffset, r *kgo.Record, offset int64) {
	if to[r.Topic] == nil {
		to[r.Topic] = map[int32]kgo.EpochOffset{}
	}
	to[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: offset}
}

// forget drops the rewinds of the partitions of parts (given up).
func (c *Consumer) forget(parts map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range parts {
		for _, p := range ps {
			delete(c.resume, topicPart{t, p})
			delete(c.committed, topicPart{t, p})
		}
	}
}

// settled records that this member committed next on a partition.
func (c *Consumer) settled(topic string, part int32, next int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.committed == nil {
		c.committed = map[topicPart]int64{}
	}
	c.committed[topicPart{topic, part}] = next
}

// unsettled returns the records of recs at or past the offset this
// member committed on their partition: those of a batch cut short that
// it did not settle.
func (c *Consumer) unsettled(recs []*kgo.Record) []*kgo.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := recs[:0:0]
	for _, r := range recs {
		if next, ok := c.committed[topicPart{r.Topic, r.Partition}]; ok && r.Offset < next {
			continue
		}
		out = append(out, r)
	}
	return out
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
