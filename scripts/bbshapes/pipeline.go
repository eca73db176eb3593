package main

// The tiny pipelines of the four shapes. Nothing here comes from the
// project: plain SQL over database/sql and plain records through kgo, as a
// user's service, relay and consumer would write them. The auditing side
// (capture, bundle, verdict) is in bundle.go.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pipe is one history's pipeline: a database of its own, a topic of two
// partitions on a broker of its own, and the hooks a breaking history
// sets to make one step go wrong.
type pipe struct {
	db    *sql.DB
	kc    *kgo.Client
	adm   *kadm.Client
	topic string
	// The load client's history (the answer rule): ours, not the
	// pipeline's.
	client []request

	// Relay hooks, by event id.
	drop  map[string]bool   // progress passes it, nothing is published
	twice map[string]bool   // published twice
	key   map[string]string // published under another key
	part  map[string]int32  // published to this partition (default 0)
	// Consumer hooks, by event id.
	noEffect   map[string]bool   // inbox row, no effect
	noInbox    map[string]bool   // effect, no inbox row
	orderOf    map[string]string // the effect names this order, not the record's key
	consumeRev bool              // consume each partition's records newest first
	commitLess int64             // commit this many offsets short of the end
}

func newPipe(db *sql.DB, kc *kgo.Client, topic string) *pipe {
	return &pipe{db: db, kc: kc, adm: kadm.NewClient(kc), topic: topic,
		drop: map[string]bool{}, twice: map[string]bool{}, key: map[string]string{}, part: map[string]int32{},
		noEffect: map[string]bool{}, noInbox: map[string]bool{}, orderOf: map[string]string{}}
}

// request is one line of the load client's history.
type request struct {
	N       int64     `json:"n"`
	Token   string    `json:"token"`
	Key     string    `json:"key"`
	Outcome string    `json:"outcome"`
	Status  int       `json:"status,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
}

// tx runs statements in one transaction.
func (p *pipe) tx(ctx context.Context, stmts ...string) error {
	t, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := t.ExecContext(ctx, s); err != nil {
			t.Rollback()
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return t.Commit()
}

// skipGTIDs commits one transaction (a table of its own, outside the
// profile's mapping) with a sequence number n past the next: the binlog
// then misses n transactions, as a server told to skip numbers, or a
// purged or filtered transaction, leaves it.
func (p *pipe) skipGTIDs(ctx context.Context, n int) error {
	c, err := p.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	var pos string
	if err := c.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		return err
	}
	g := strings.Split(pos, "-")
	last, err := strconv.ParseUint(g[len(g)-1], 10, 64)
	if err != nil {
		return fmt.Errorf("gtid_binlog_pos %q: %w", pos, err)
	}
	for _, q := range []string{fmt.Sprintf("SET SESSION gtid_seq_no = %d", last+uint64(n)+1), "CREATE TABLE gap_marker (id INT PRIMARY KEY)"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// open starts a transaction left open, to commit later (a slow writer).
func (p *pipe) open(ctx context.Context, stmts ...string) (*sql.Tx, error) {
	t, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, s := range stmts {
		if _, err := t.ExecContext(ctx, s); err != nil {
			t.Rollback()
			return nil, fmt.Errorf("%s: %w", s, err)
		}
	}
	return t, nil
}

// serve is the service answering request n: its transaction, and the
// answer our client records (201 when it committed, 500 when not; lie
// answers 201 whatever happened).
func (p *pipe) serve(ctx context.Context, n int64, token string, lie bool, rollback bool, stmts ...string) error {
	r := request{N: n, Token: token, Key: fmt.Sprintf("k-%d", n), Start: time.Now().UTC()}
	var err error
	if rollback {
		var t *sql.Tx
		if t, err = p.open(ctx, stmts...); err == nil {
			err = t.Rollback()
		}
		if err == nil {
			err = errors.New("rolled back")
		}
	} else {
		err = p.tx(ctx, stmts...)
	}
	r.End = time.Now().UTC()
	switch {
	case err == nil || lie:
		r.Outcome, r.Status = "ok", 201
	default:
		r.Outcome, r.Status = "fail", 409
	}
	p.client = append(p.client, r)
	return nil
}

// outRecord is what a relay publishes for one row.
type outRecord struct {
	id, agg, payload string
	headers          map[string]string
}

// publish produces one row's record, honouring the hooks.
func (p *pipe) publish(ctx context.Context, o outRecord) error {
	if p.drop[o.id] {
		return nil
	}
	key := o.agg
	if k, ok := p.key[o.id]; ok {
		key = k
	}
	r := &kgo.Record{Topic: p.topic, Partition: p.part[o.id], Key: []byte(key), Value: []byte(o.payload)}
	for k, v := range o.headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	n := 1
	if p.twice[o.id] {
		n = 2
	}
	for range n {
		if err := p.kc.ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("produce %s: %w", o.id, err)
		}
	}
	return nil
}

// produceRaw produces a record no row asked for (a phantom).
func (p *pipe) produceRaw(ctx context.Context, key, value string, headers map[string]string) error {
	return p.publish(ctx, outRecord{id: "\x00raw", agg: key, payload: value, headers: headers})
}

// cursorRelay is a relay keeping a cursor: it publishes the rows of
// events past relay_cursor.last_offset, in offset order, then moves the
// cursor to the last one it saw.
func (p *pipe) cursorRelay(ctx context.Context) error {
	var cur int64
	if err := p.db.QueryRowContext(ctx, "SELECT last_offset FROM relay_cursor WHERE relay = 'r1'").Scan(&cur); err != nil {
		return err
	}
	rows, err := p.db.QueryContext(ctx, "SELECT `offset`, event_id, aggregate_id, payload FROM events WHERE `offset` > ? ORDER BY `offset`", cur)
	if err != nil {
		return err
	}
	var outs []outRecord
	last := cur
	for rows.Next() {
		var o outRecord
		if err := rows.Scan(&last, &o.id, &o.agg, &o.payload); err != nil {
			rows.Close()
			return err
		}
		o.headers = map[string]string{"event_id": o.id}
		outs = append(outs, o)
	}
	rows.Close()
	for _, o := range outs {
		if err := p.publish(ctx, o); err != nil {
			return err
		}
	}
	if last == cur {
		return nil
	}
	_, err = p.db.ExecContext(ctx, "UPDATE relay_cursor SET last_offset = ? WHERE relay = 'r1'", last)
	return err
}

// completedRelay is Spring Modulith's way: publish every publication not
// completed, then set its completion_date.
func (p *pipe) completedRelay(ctx context.Context) error {
	rows, err := p.db.QueryContext(ctx, "SELECT id, JSON_VALUE(serialized_event, '$.orderId'), serialized_event FROM event_publication WHERE completion_date IS NULL ORDER BY publication_date, id")
	if err != nil {
		return err
	}
	var outs []outRecord
	for rows.Next() {
		var o outRecord
		if err := rows.Scan(&o.id, &o.agg, &o.payload); err != nil {
			rows.Close()
			return err
		}
		o.headers = map[string]string{"publication_id": o.id}
		outs = append(outs, o)
	}
	rows.Close()
	for _, o := range outs {
		if err := p.publish(ctx, o); err != nil {
			return err
		}
		if _, err := p.db.ExecContext(ctx, "UPDATE event_publication SET completion_date = NOW(6) WHERE id = ?", o.id); err != nil {
			return err
		}
	}
	return nil
}

// deleteRelay is goharvest's way: publish a row, then delete it.
func (p *pipe) deleteRelay(ctx context.Context) error {
	rows, err := p.db.QueryContext(ctx, "SELECT id, event_id, aggregate_id, payload FROM outbox ORDER BY id")
	if err != nil {
		return err
	}
	type row struct {
		id int64
		o  outRecord
	}
	var rs []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.o.id, &r.o.agg, &r.o.payload); err != nil {
			rows.Close()
			return err
		}
		r.o.headers = map[string]string{"event_id": r.o.id}
		rs = append(rs, r)
	}
	rows.Close()
	for _, r := range rs {
		if err := p.publish(ctx, r.o); err != nil {
			return err
		}
		if _, err := p.db.ExecContext(ctx, "DELETE FROM outbox WHERE id = ?", r.id); err != nil {
			return err
		}
	}
	return nil
}

// debeziumEmit is what Debezium's outbox event router publishes for a
// row it read from the binlog: key aggregateid, value payload, the event
// id in header id. The row is gone from the table (inserted and deleted
// in one transaction), so the emitter is handed the row the service
// wrote: the after image the binlog holds.
func (p *pipe) debeziumEmit(ctx context.Context, id, aggType, agg, typ, payload string) error {
	return p.publish(ctx, outRecord{id: id, agg: agg, payload: payload, headers: map[string]string{"id": id}})
}

// consume is a consumer of group g: it reads the topic to its end and,
// per record, writes its inbox row and its effect in one transaction (a
// duplicate's inbox insert fails and rolls back), then commits the
// offsets.
func (p *pipe) consume(ctx context.Context, group, consumer string) error {
	ends, err := p.adm.ListEndOffsets(ctx, p.topic)
	if err != nil {
		return err
	}
	commit := kadm.Offsets{}
	for part, end := range ends[p.topic] {
		if end.Err != nil {
			return end.Err
		}
		recs, err := p.fetch(ctx, part, end.Offset)
		if err != nil {
			return err
		}
		if p.consumeRev {
			for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
				recs[i], recs[j] = recs[j], recs[i]
			}
		}
		for _, r := range recs {
			if err := p.handle(ctx, consumer, r); err != nil {
				return err
			}
		}
		if end.Offset > 0 {
			commit.Add(kadm.Offset{Topic: p.topic, Partition: part, At: end.Offset - p.commitLess, LeaderEpoch: -1})
		}
	}
	resp, err := p.adm.CommitOffsets(ctx, group, commit)
	if err != nil {
		return err
	}
	return resp.Error()
}

func (p *pipe) fetch(ctx context.Context, part int32, end int64) ([]*kgo.Record, error) {
	if end == 0 {
		return nil, nil
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(p.kc.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{p.topic: {part: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []*kgo.Record
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for int64(len(out)) < end {
		fs := c.PollFetches(fctx)
		if err := fctx.Err(); err != nil {
			return nil, fmt.Errorf("fetch %s/%d: %w", p.topic, part, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out, nil
}

func header(r *kgo.Record, k string) string {
	for _, h := range r.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return ""
}

func (p *pipe) handle(ctx context.Context, consumer string, r *kgo.Record) error {
	id := header(r, "event_id")
	order := string(r.Key)
	if o, ok := p.orderOf[id]; ok {
		order = o
	}
	var stmts []string
	if !p.noInbox[id] {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO inbox (consumer, event_id) VALUES (%s, %s)", quote(consumer), quote(id)))
	}
	if !p.noEffect[id] {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO effect (consumer, event_id, order_id, body) VALUES (%s, %s, %s, 'notified')", quote(consumer), quote(id), quote(order)))
	}
	err := p.tx(ctx, stmts...)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 {
		return nil // a duplicate, absorbed by the inbox
	}
	return err
}

// quote is a SQL string literal (the fixtures' values hold no backslash).
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
