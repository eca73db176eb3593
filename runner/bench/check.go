package bench

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The check's queries, over the run's events (the history, h-<n>, is not
// the run's). Each returns one count.
const (
	qCheckEvents = `SELECT COUNT(*) FROM outbox WHERE event_id NOT LIKE 'h-%'`
	qCheckSent   = `SELECT COUNT(*) FROM outbox WHERE event_id NOT LIKE 'h-%' AND state = 'SENT'`
	qCheckEffect = `SELECT COUNT(*) FROM notification`
	qCheckInbox  = `SELECT COUNT(*) FROM inbox`
	// an event without an effect
	qCheckMissing = `SELECT COUNT(*) FROM outbox o
WHERE o.event_id NOT LIKE 'h-%' AND NOT EXISTS (SELECT 1 FROM notification n WHERE n.event_id = o.event_id)`
	// an event with more than one effect
	qCheckDuplicates = `SELECT COUNT(*) FROM (SELECT event_id FROM notification GROUP BY event_id HAVING COUNT(*) > 1) d`
	// an effect of no event of the run, or without its inbox row
	qCheckOrphans = `SELECT COUNT(*) FROM notification n
WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = n.event_id AND o.event_id NOT LIKE 'h-%')
   OR NOT EXISTS (SELECT 1 FROM inbox i WHERE i.consumer = n.consumer AND i.event_id = n.event_id)`
)

// check counts the run's events and effects on the scratch database and
// the records on the topic: OK when want events were placed, all SENT,
// each with exactly one effect and one inbox row, and no effect without
// its event and inbox row.
func (p *pipeline) check(ctx context.Context, want int64) (Check, error) {
	var c Check
	for _, q := range []struct {
		sql string
		dst *int64
	}{
		{qCheckEvents, &c.Events}, {qCheckSent, &c.Sent}, {qCheckEffect, &c.Effects}, {qCheckInbox, &c.Inbox},
		{qCheckMissing, &c.Missing}, {qCheckDuplicates, &c.Duplicates}, {qCheckOrphans, &c.Orphans},
	} {
		if err := p.db.QueryRowContext(ctx, q.sql).Scan(q.dst); err != nil {
			return c, fmt.Errorf("check: %w", err)
		}
	}
	records, err := p.records(ctx)
	if err != nil {
		return c, err
	}
	c.Records = records
	c.Problems = c.problems(want, !p.opts.RelayOnly)
	c.OK = len(c.Problems) == 0
	return c, nil
}

// problems lists what is wrong with c for a run that placed want events;
// without effects (a relay-only run), only what the relays did.
func (c *Check) problems(want int64, effects bool) []string {
	var out []string
	add := func(bad bool, format string, args ...any) {
		if bad {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	add(c.Events != want, "%d events placed, want %d", c.Events, want)
	add(c.Sent != c.Events, "%d of %d events SENT", c.Sent, c.Events)
	add(c.Records < c.Events, "%d records on the topic for %d events", c.Records, c.Events)
	if !effects {
		return out
	}
	add(c.Effects != c.Events, "%d effects for %d events", c.Effects, c.Events)
	add(c.Inbox != c.Events, "%d inbox rows for %d events", c.Inbox, c.Events)
	add(c.Missing > 0, "%d events without an effect", c.Missing)
	add(c.Duplicates > 0, "%d events with more than one effect", c.Duplicates)
	add(c.Orphans > 0, "%d effects without their event or inbox row", c.Orphans)
	return out
}

// records counts the records on the topic (the end offsets of its
// partitions; nothing is deleted from it during a run).
func (p *pipeline) records(ctx context.Context) (int64, error) {
	cl, err := kgo.NewClient(p.kafka.ClientOpts()...)
	if err != nil {
		return 0, fmt.Errorf("check: %w", err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, p.topic)
	if err != nil {
		return 0, fmt.Errorf("check: end offsets of %s: %w", p.topic, err)
	}
	var n int64
	offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n, nil
}
