package main

import (
	"context"
	stdsql "database/sql"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
)

// runCount counts what each stage of the pipeline holds once it settled.
func runCount(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("count", `Waits until the pipeline settles (every order has its record and its inbox
row, or nothing changed for --settle once the forwarder's cursor reached the
last outbox row), then prints the orders committed, the outbox rows, the
records on the topic (and distinct events among them), the inbox rows and
notifications, and the forwarder's cursor; then every order without a
record, with its outbox offset and whether the cursor passed it. Exit 1
when an order has no record or no inbox row.

Example:
  watermill-example count --mysql-dsn 'root@tcp(127.0.0.1:3306)/shop' --brokers 127.0.0.1:9092 --topic orders`, stderr)
	var dbf dbFlags
	dbf.register(fs)
	var kf kafkaFlags
	kf.register(fs)
	group := fs.String("group", envOr("FORWARDER_GROUP", "forwarder"), "the forwarder's consumer `group` (its cursor row) [FORWARDER_GROUP]")
	settle := fs.Duration("settle", 10*time.Second, "how long nothing may change before the counts are final")
	timeout := fs.Duration("timeout", 2*time.Minute, "the longest wait")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	brokers, err := kf.check()
	if err != nil {
		return exitCode(stderr, "count", err)
	}
	db, err := dbf.open(ctx)
	if err != nil {
		return exitCode(stderr, "count", err)
	}
	defer db.Close()
	c, err := settled(ctx, db, brokers, kf.topic, *group, *settle, *timeout)
	if err != nil {
		return exitCode(stderr, "count", err)
	}
	c.print(stdout)
	if len(c.missing) > 0 || c.inboxEvents < c.orders {
		return 1
	}
	return 0
}

// counts is what the pipeline's stages hold at one moment.
type counts struct {
	orders, outbox, records, events, inbox, inboxEvents, notifications int
	maxOffset, acked                                                   int64
	missing                                                            []missingOrder
}

// missingOrder is a committed order with no record on the topic.
type missingOrder struct {
	orderID, offset int64
	eventID         string
}

func (c counts) done() bool { return len(c.missing) == 0 && c.inboxEvents == c.orders }

func (c counts) same(d counts) bool {
	return c.orders == d.orders && c.outbox == d.outbox && c.records == d.records && c.inbox == d.inbox &&
		c.notifications == d.notifications && c.acked == d.acked
}

func (c counts) print(w io.Writer) {
	fmt.Fprintf(w, "orders %d, outbox rows %d (max offset %d), cursor offset_acked %d, records %d (%d distinct events, %d duplicates), inbox rows %d (%d events), notifications %d\n",
		c.orders, c.outbox, c.maxOffset, c.acked, c.records, c.events, c.records-c.events, c.inbox, c.inboxEvents, c.notifications)
	fmt.Fprintf(w, "orders without a record: %d\n", len(c.missing))
	for _, m := range c.missing {
		passed := "not passed by the cursor"
		if m.offset > 0 && m.offset <= c.acked {
			passed = "passed by the cursor"
		}
		fmt.Fprintf(w, "  order %d event %s: outbox offset %d, %s\n", m.orderID, m.eventID, m.offset, passed)
	}
}

// settled polls until the counts are done, or stable for settle with the
// cursor at the last outbox row, or timeout passed.
func settled(ctx context.Context, db *stdsql.DB, brokers []string, topic, group string, settle, timeout time.Duration) (counts, error) {
	deadline := time.Now().Add(timeout)
	var last counts
	stableSince := time.Now()
	for {
		c, err := measure(ctx, db, brokers, topic, group)
		if err != nil {
			return c, err
		}
		if !c.same(last) {
			last, stableSince = c, time.Now()
		}
		stable := time.Since(stableSince) >= settle && c.acked >= c.maxOffset
		if c.done() || stable || time.Now().After(deadline) {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// measure reads the counts once.
func measure(ctx context.Context, db *stdsql.DB, brokers []string, topic, group string) (c counts, err error) {
	orders := map[string]int64{} // event id -> order id
	rows, err := db.QueryContext(ctx, "SELECT id, event_id FROM orders")
	if err != nil {
		return c, fmt.Errorf("read orders: %w", err)
	}
	for rows.Next() {
		var id int64
		var ev string
		if err := rows.Scan(&id, &ev); err != nil {
			rows.Close()
			return c, err
		}
		orders[ev] = id
	}
	if err := rows.Close(); err != nil {
		return c, err
	}
	c.orders = len(orders)
	offsets := map[string]int64{} // event id -> outbox offset
	rows, err = db.QueryContext(ctx, "SELECT `offset`, JSON_VALUE(payload, '$.uuid') FROM watermill_outbox")
	if err != nil {
		return c, fmt.Errorf("read watermill_outbox: %w", err)
	}
	for rows.Next() {
		var off int64
		var ev stdsql.NullString
		if err := rows.Scan(&off, &ev); err != nil {
			rows.Close()
			return c, err
		}
		offsets[ev.String] = off
		c.outbox++
		c.maxOffset = max(c.maxOffset, off)
	}
	if err := rows.Close(); err != nil {
		return c, err
	}
	err = db.QueryRowContext(ctx, "SELECT COALESCE(MAX(offset_acked), 0) FROM watermill_offsets_outbox WHERE consumer_group = ?", group).Scan(&c.acked)
	if err != nil {
		return c, fmt.Errorf("read the forwarder's cursor: %w", err)
	}
	err = db.QueryRowContext(ctx, "SELECT COUNT(*), COUNT(DISTINCT event_id), (SELECT COUNT(*) FROM notification) FROM inbox").
		Scan(&c.inbox, &c.inboxEvents, &c.notifications)
	if err != nil {
		return c, fmt.Errorf("read inbox: %w", err)
	}
	seen, err := topicEvents(brokers, topic)
	if err != nil {
		return c, err
	}
	for _, n := range seen {
		c.records += n
	}
	c.events = len(seen)
	for ev, id := range orders {
		if seen[ev] == 0 {
			c.missing = append(c.missing, missingOrder{orderID: id, offset: offsets[ev], eventID: ev})
		}
	}
	sort.Slice(c.missing, func(i, j int) bool { return c.missing[i].offset < c.missing[j].offset })
	return c, nil
}

// topicEvents reads every record of topic, from each partition's oldest
// offset to its end, and counts them by Watermill message uuid.
func topicEvents(brokers []string, topic string) (map[string]int, error) {
	cl, err := sarama.NewClient(brokers, saramaConfig())
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	cons, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	parts, err := cl.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	seen := map[string]int{}
	for _, p := range parts {
		end, err := cl.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return nil, fmt.Errorf("end offset of %s/%d: %w", topic, p, err)
		}
		start, err := cl.GetOffset(topic, p, sarama.OffsetOldest)
		if err != nil || start >= end {
			continue
		}
		if err := readPartition(cons, topic, p, start, end, seen); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

func readPartition(cons sarama.Consumer, topic string, p int32, start, end int64, seen map[string]int) error {
	pc, err := cons.ConsumePartition(topic, p, start)
	if err != nil {
		return fmt.Errorf("read %s/%d: %w", topic, p, err)
	}
	defer pc.Close()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m := <-pc.Messages():
			id := ""
			for _, h := range m.Headers {
				if string(h.Key) == kafka.UUIDHeaderKey {
					id = string(h.Value)
				}
			}
			seen[strings.TrimSpace(id)]++
			if m.Offset+1 >= end {
				return nil
			}
		case err := <-pc.Errors():
			return fmt.Errorf("read %s/%d: %w", topic, p, err)
		case <-timeout:
			return fmt.Errorf("read %s/%d: no record at offsets up to %d after 30s", topic, p, end)
		}
	}
}
