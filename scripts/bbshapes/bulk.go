package main

// -bulk N: one legal history of the cursor shape at volume, for
// BENCHMARKS.md (the witness-only verifier on N committed events). The
// service, the relay and the consumer work in batches of bulkBatch rows
// per transaction (INSERT ... SELECT from MariaDB's sequence engine),
// so that a million events commit in minutes; the consumer writes its
// inbox rows and effects from the events table, not from the records it
// would have read (the same rows, without a million round trips).

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const bulkBatch = 10_000

func (s *server) bulk(ctx context.Context, out string, n int) error {
	t0 := time.Now()
	c, p, err := s.begin(ctx, filepath.Dir(out), "bb_bulk", &cursorShape)
	if err != nil {
		return err
	}
	defer p.db.Close()
	if filepath.Base(out) != "audit.json" {
		return fmt.Errorf("-o for -bulk is DIR/audit.json, not %s", out)
	}
	for a := 1; a <= n; a += bulkBatch {
		b := min(a+bulkBatch-1, n)
		seq := fmt.Sprintf("seq_%d_to_%d", a, b)
		if err := p.tx(ctx,
			"INSERT INTO orders (id, status) SELECT CONCAT('o-', seq), 'NEW' FROM "+seq,
			"INSERT INTO events (event_id, aggregate_id, payload) SELECT CONCAT('e-', seq), CONCAT('o-', seq), "+
				"CONCAT('{\"order\":\"o-', seq, '\",\"note\":\"tok-', seq, '\"}') FROM "+seq); err != nil {
			return err
		}
	}
	fmt.Printf("service: %d events committed in %s\n", n, time.Since(t0).Round(time.Millisecond))
	t1 := time.Now()
	for {
		moved, err := bulkRelay(ctx, p)
		if err != nil {
			return err
		}
		if !moved {
			break
		}
	}
	fmt.Printf("relay: published in %s\n", time.Since(t1).Round(time.Millisecond))
	t2 := time.Now()
	for from := int64(0); ; {
		var to sql.NullInt64
		if err := p.db.QueryRowContext(ctx, "SELECT MAX(`offset`) FROM (SELECT `offset` FROM events WHERE `offset` > ? ORDER BY `offset` LIMIT ?) t",
			from, bulkBatch).Scan(&to); err != nil {
			return err
		}
		if !to.Valid {
			break
		}
		where := fmt.Sprintf(" FROM events WHERE `offset` > %d AND `offset` <= %d", from, to.Int64)
		if err := p.tx(ctx, "INSERT INTO inbox (consumer, event_id) SELECT 'c1', event_id"+where,
			"INSERT INTO effect (consumer, event_id, order_id, body) SELECT 'c1', event_id, aggregate_id, 'notified'"+where); err != nil {
			return err
		}
		from = to.Int64
	}
	ends, err := p.adm.ListEndOffsets(ctx, p.topic)
	if err != nil {
		return err
	}
	commit := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) {
		commit.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
	})
	resp, err := p.adm.CommitOffsets(ctx, "notify", commit)
	if err != nil {
		return err
	}
	if err := resp.Error(); err != nil {
		return err
	}
	fmt.Printf("consumer: inbox and effects in %s\n", time.Since(t2).Round(time.Millisecond))
	t3 := time.Now()
	prof := fmt.Sprintf(cursorShape.profile, "allowed", "30s")
	v, err := s.finish(ctx, c, []byte(prof), nil, []string{"bbshapes", "-bulk", fmt.Sprint(n)})
	if err != nil {
		return err
	}
	fmt.Printf("captured, written and verified in %s: %s, %d events, %d records, %d effects\n", time.Since(t3).Round(time.Millisecond),
		v.Status, v.Layer.Stats.Events, v.Layer.Stats.Records, v.Layer.Stats.Effects)
	return nil
}

// bulkRelay publishes the next batch past the cursor (each record to
// partition offset mod 2) and moves the cursor; false when none was left.
func bulkRelay(ctx context.Context, p *pipe) (bool, error) {
	var cur int64
	if err := p.db.QueryRowContext(ctx, "SELECT last_offset FROM relay_cursor WHERE relay = 'r1'").Scan(&cur); err != nil {
		return false, err
	}
	rows, err := p.db.QueryContext(ctx, "SELECT `offset`, event_id, aggregate_id, payload FROM events WHERE `offset` > ? ORDER BY `offset` LIMIT ?", cur, bulkBatch)
	if err != nil {
		return false, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		last  = cur
	)
	for rows.Next() {
		var id, agg, payload string
		if err := rows.Scan(&last, &id, &agg, &payload); err != nil {
			rows.Close()
			return false, err
		}
		wg.Add(1)
		r := &kgo.Record{Topic: p.topic, Partition: int32(last % 2), Key: []byte(agg), Value: []byte(payload),
			Headers: []kgo.RecordHeader{{Key: "event_id", Value: []byte(id)}}}
		p.kc.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	rows.Close()
	wg.Wait()
	if first != nil {
		return false, first
	}
	if last == cur {
		return false, nil
	}
	_, err = p.db.ExecContext(ctx, "UPDATE relay_cursor SET last_offset = ? WHERE relay = 'r1'", last)
	return true, err
}
