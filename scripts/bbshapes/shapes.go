package main

// The four shapes: each a schema, a profile written as a user would, and
// the pipeline steps of its legal history.

import (
	"context"
	"fmt"
)

type shape struct {
	name    string
	ddl     []string
	profile string // %s: duplicates, %s: liveness
}

const topic = "shop.orders"

// cursorShape: a relay keeping a cursor over an auto-increment offset
// (Watermill's forwarder without its envelope), with a business table,
// an inbox and effects, and our load client. The richest shape: most
// rules' fixtures are histories of it.
var cursorShape = shape{name: "cursor",
	ddl: []string{
		"CREATE TABLE orders (id VARCHAR(32) PRIMARY KEY, status VARCHAR(16) NOT NULL)",
		"CREATE TABLE events (`offset` BIGINT AUTO_INCREMENT PRIMARY KEY, event_id VARCHAR(64) NOT NULL UNIQUE, aggregate_id VARCHAR(32) NOT NULL, payload TEXT NOT NULL)",
		"CREATE TABLE relay_cursor (relay VARCHAR(32) PRIMARY KEY, last_offset BIGINT NOT NULL)",
		"INSERT INTO relay_cursor VALUES ('r1', 0)",
		"CREATE TABLE inbox (consumer VARCHAR(32) NOT NULL, event_id VARCHAR(64) NOT NULL, PRIMARY KEY (consumer, event_id))",
		"CREATE TABLE effect (id BIGINT AUTO_INCREMENT PRIMARY KEY, consumer VARCHAR(32) NOT NULL, event_id VARCHAR(64) NOT NULL, order_id VARCHAR(32) NOT NULL, body VARCHAR(64) NOT NULL)",
	},
	profile: `# A relay with a cursor (made by scripts/bbshapes, outside the project).
name: cursor-relay
topic: {name: shop.orders, event_id: {header: event_id}, key: aggregate, groups: [notify]}
outbox:
  table: events
  event_id: event_id
  aggregate: aggregate_id
  payload: {column: payload}
  progress: {kind: cursor, table: relay_cursor, column: last_offset, against: offset, match: {relay: r1}}
business: {table: orders, ops: [insert, update]}
inbox: {table: inbox, event_id: event_id, consumer: consumer}
effect: {table: effect, event_id: event_id, consumer: consumer, per_event: 1}
promises: {order: per-aggregate, duplicates: %s, liveness: %s}
load:
  http: {method: POST, url: "http://shop.invalid/orders"}
  token: "tok-{{n}}"
  correlate: "payload$.note"
invariants:
  - id: effect-of-no-order
    sql: |
      SELECT f.id FROM effect f
      LEFT JOIN orders o ON o.id = f.order_id
      WHERE o.id IS NULL
`}

// place is the cursor shape's service: order n of aggregate agg (its
// first event inserts the order, a later one updates it) and its event.
func (p *pipe) place(ctx context.Context, n int64, agg string, first bool) error {
	return p.serve(ctx, n, fmt.Sprintf("tok-%d", n), false, false, placeSQL(n, agg, first)...)
}

func placeSQL(n int64, agg string, first bool) []string {
	biz := fmt.Sprintf("UPDATE orders SET status = 'CHANGED-%d' WHERE id = %s", n, quote(agg))
	if first {
		biz = fmt.Sprintf("INSERT INTO orders (id, status) VALUES (%s, 'NEW')", quote(agg))
	}
	return []string{biz, fmt.Sprintf("INSERT INTO events (event_id, aggregate_id, payload) VALUES ('e-%d', %s, '{\"order\":%s,\"note\":\"tok-%d\"}')",
		n, quote(agg), quote2(agg), n)}
}

func quote2(s string) string { return `"` + s + `"` }

// cursorLegal: three orders (two events of o-1, one of o-2), relayed and
// consumed once.
func cursorLegal(ctx context.Context, p *pipe) error {
	return steps(
		func() error { return p.place(ctx, 1, "o-1", true) },
		func() error { return p.place(ctx, 2, "o-2", true) },
		func() error { return p.place(ctx, 3, "o-1", false) },
		func() error { return p.cursorRelay(ctx) },
		func() error { return p.consume(ctx, "notify", "c1") },
	)
}

// completedShape: Spring Modulith's event publication registry, a row
// per (event, listener), done when completion_date is set.
var completedShape = shape{name: "completed",
	ddl: []string{
		"CREATE TABLE event_publication (id CHAR(36) PRIMARY KEY, listener_id VARCHAR(255) NOT NULL, event_type VARCHAR(255) NOT NULL, serialized_event TEXT NOT NULL, publication_date DATETIME(6) NOT NULL, completion_date DATETIME(6) NULL)",
	},
	profile: `# Spring Modulith's registry: a completed-at relay (scripts/bbshapes).
name: completed-relay
topic: {name: shop.orders, event_id: {header: publication_id}, key: aggregate}
outbox:
  table: event_publication
  event_id: id
  aggregate: "serialized_event$.orderId"
  payload: {column: serialized_event}
  progress: {kind: completed, column: completion_date}
promises: {order: per-aggregate, duplicates: %s, liveness: %s}
`}

func pubID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

func (p *pipe) publishEvent(ctx context.Context, n, order int) error {
	return p.tx(ctx, fmt.Sprintf("INSERT INTO event_publication VALUES ('%s', 'notifier', 'OrderPlaced', '{\"orderId\":%d,\"n\":%d}', NOW(6), NULL)",
		pubID(n), order, n))
}

func completedLegal(ctx context.Context, p *pipe) error {
	return steps(
		func() error { return p.publishEvent(ctx, 1, 7) },
		func() error { return p.publishEvent(ctx, 2, 8) },
		func() error { return p.publishEvent(ctx, 3, 7) },
		func() error { return p.completedRelay(ctx) },
	)
}

// deleteShape: goharvest's way, the relay deletes a row once published.
var deleteShape = shape{name: "delete",
	ddl: []string{
		"CREATE TABLE outbox (id BIGINT AUTO_INCREMENT PRIMARY KEY, event_id VARCHAR(64) NOT NULL UNIQUE, aggregate_id VARCHAR(32) NOT NULL, payload TEXT NOT NULL)",
	},
	profile: `# A relay that deletes what it published, as goharvest does (scripts/bbshapes).
name: delete-relay
topic: {name: shop.orders, event_id: {header: event_id}, key: aggregate}
outbox:
  table: outbox
  event_id: event_id
  aggregate: aggregate_id
  payload: {column: payload}
  progress: {kind: delete}
promises: {order: per-aggregate, duplicates: %s, liveness: %s}
`}

func (p *pipe) enqueue(ctx context.Context, n int, agg string) error {
	return p.tx(ctx, fmt.Sprintf("INSERT INTO outbox (event_id, aggregate_id, payload) VALUES ('e-%d', '%s', '{\"n\":%d}')", n, agg, n))
}

func deleteLegal(ctx context.Context, p *pipe) error {
	return steps(
		func() error { return p.enqueue(ctx, 1, "a-1") },
		func() error { return p.enqueue(ctx, 2, "a-2") },
		func() error { return p.enqueue(ctx, 3, "a-1") },
		func() error { return p.deleteRelay(ctx) },
	)
}

// debeziumShape: Debezium's outbox event router convention. The service
// inserts the row and deletes it in the same transaction; the router
// reads the insert from the binlog and publishes key aggregateid, value
// payload, the event id in header id. Nothing shows progress.
var debeziumShape = shape{name: "debezium",
	ddl: []string{
		"CREATE TABLE outbox (id CHAR(36) PRIMARY KEY, aggregatetype VARCHAR(255) NOT NULL, aggregateid VARCHAR(255) NOT NULL, type VARCHAR(255) NOT NULL, payload LONGTEXT)",
	},
	profile: `# Debezium's outbox event router convention (scripts/bbshapes).
name: debezium-outbox
topic: {name: shop.orders, event_id: {header: id}, key: aggregate}
outbox:
  table: outbox
  event_id: id
  aggregate: aggregateid
  payload: {column: payload}
  progress: {kind: none}
promises: {order: per-aggregate, duplicates: %s, liveness: %s}
`}

type dbzRow struct{ id, agg, payload string }

func dbzEvent(n int, agg string) dbzRow {
	return dbzRow{id: pubID(100 + n), agg: agg, payload: fmt.Sprintf(`{"orderId":"%s","n":%d}`, agg, n)}
}

func (r dbzRow) sql() []string {
	return []string{
		fmt.Sprintf("INSERT INTO outbox VALUES ('%s', 'Order', '%s', 'OrderCreated', '%s')", r.id, r.agg, r.payload),
		fmt.Sprintf("DELETE FROM outbox WHERE id = '%s'", r.id),
	}
}

// dbzWrite is the service's transaction; emit is the router's record.
func (p *pipe) dbzWrite(ctx context.Context, r dbzRow) error { return p.tx(ctx, r.sql()...) }
func (p *pipe) dbzEmit(ctx context.Context, r dbzRow) error {
	return p.debeziumEmit(ctx, r.id, "Order", r.agg, "OrderCreated", r.payload)
}

func debeziumLegal(ctx context.Context, p *pipe) error {
	rows := []dbzRow{dbzEvent(1, "o-1"), dbzEvent(2, "o-2"), dbzEvent(3, "o-1")}
	for _, r := range rows {
		if err := p.dbzWrite(ctx, r); err != nil {
			return err
		}
	}
	for _, r := range rows {
		if err := p.dbzEmit(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func steps(fs ...func() error) error {
	for _, f := range fs {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}
