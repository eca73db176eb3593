package crosscheck

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// The column checks on made-up transactions, at their bounds; the same
// checks on a real run's binlog, column by column, are checks'
// (TestEveryColumnEdited).

var colT0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// stampAt is a time the server would set: t0 plus d, with microseconds.
func stampAt(d time.Duration) time.Time { return colT0.Add(d + 123456*time.Microsecond) }

type img = map[string]binlog.Value

func ins(table string, a img) binlog.RowChange {
	return binlog.RowChange{Table: table, Op: binlog.Insert, After: a}
}

func upd(table string, b, a img) binlog.RowChange {
	return binlog.RowChange{Table: table, Op: binlog.Update, Before: b, After: a}
}

// goodOrder is an order transaction as the reference writes it, each
// row editable by its index: stock, orders, order_lines, idempotency
// record, intent.
func goodOrder() []binlog.RowChange {
	at := stampAt(0)
	return []binlog.RowChange{
		upd("stock", img{"sku": "S", "quantity": int64(5), "price_cents": int64(250)}, img{"sku": "S", "quantity": int64(3), "price_cents": int64(250)}),
		ins("orders", img{"id": int64(7), "principal": "alice", "sku": "S", "quantity": int64(2), "amount_cents": int64(500), "status": "PLACED", "created_at": at}),
		ins("order_lines", img{"id": int64(1), "order_id": int64(7), "sku": "S", "quantity": int64(2), "price_cents": int64(250)}),
		ins("idempotency_records", img{"id": int64(1), "principal": "alice", "idem_key": "k", "request_hash": strings.Repeat("ab", 32),
			"status_code": int64(201), "order_id": int64(7), "created_at": at,
			"response_body": `{"order_id":7,"event_id":"e-7","sku":"S","quantity":2,"amount_cents":500,"stock_left":3}`}),
		ins("outbox", img{"id": int64(1), "event_id": "e-7", "aggregate_id": int64(7), "aggregate_version": int64(1), "state": "PENDING",
			"claim_version": int64(0), "claim_id": nil, "lease_until": nil, "sent_at": nil, "created_at": at, "changed_at": at,
			"payload": `{"orderId":7,"sku":"S","quantity":2,"amountCents":500}`}),
	}
}

func columnReasons(txs ...[]binlog.RowChange) []string {
	var ts []binlog.Transaction
	for i, chs := range txs {
		ts = append(ts, binlog.Transaction{GTID: binlog.GTID{Server: 1, Seq: uint64(i + 1)}, File: "binlog.000001", Time: colT0, Changes: chs})
	}
	s := &scenarioCheck{db: newScenarioDB("ofa_x_s", ts), runID: "r1"}
	s.marker()
	s.columns()
	var out []string
	for _, r := range s.reasons {
		out = append(out, r.Rule+": "+r.Message)
	}
	return out
}

func TestColumns(t *testing.T) {
	edit := func(i int, col string, v any) []binlog.RowChange {
		chs := goodOrder()
		chs[i].After[col] = v
		return chs
	}
	sent := func(sentAt, changedAt any) []binlog.RowChange {
		b := img{"id": int64(1), "event_id": "e-7", "state": "CLAIMED", "sent_at": nil, "changed_at": stampAt(0)}
		return []binlog.RowChange{upd("outbox", b, img{"id": int64(1), "event_id": "e-7", "state": "SENT", "sent_at": sentAt, "changed_at": changedAt})}
	}
	note := func(body string, at time.Time) binlog.RowChange {
		return ins("notification", img{"id": int64(1), "consumer": "c", "event_id": "e-7", "order_id": int64(7), "body": body, "created_at": at})
	}
	twoLines := goodOrder()
	twoLines[1].After["quantity"], twoLines[1].After["amount_cents"] = int64(3), int64(750)
	twoLines = append(twoLines[:3], append([]binlog.RowChange{ins("order_lines", img{"id": int64(2), "order_id": int64(7), "sku": "S",
		"quantity": int64(1), "price_cents": int64(250)})}, twoLines[3:]...)...)
	twoLines[4].After["response_body"] = `{"order_id":7,"event_id":"e-7","sku":"S","quantity":3,"amount_cents":750}`
	listed := func(payload string) []binlog.RowChange {
		chs := make([]binlog.RowChange, len(twoLines))
		for i, c := range twoLines {
			c.After = maps.Clone(c.After)
			chs[i] = c
		}
		chs[5].After["payload"] = payload
		return chs
	}
	for _, tc := range []struct {
		name string
		txs  [][]binlog.RowChange
		want string // a part of the one reason; "" for none
	}{
		{"the reference's order", [][]binlog.RowChange{goodOrder()}, ""},
		{"a stamp a minute and a second late", [][]binlog.RowChange{edit(1, "created_at", colT0.Add(61*time.Second))}, ""},
		{"a stamp past a minute and a second", [][]binlog.RowChange{edit(1, "created_at", colT0.Add(61*time.Second+time.Microsecond))}, "not the database clock"},
		{"a stamp a minute early", [][]binlog.RowChange{edit(1, "created_at", colT0.Add(-60*time.Second))}, ""},
		{"a stamp past a minute early", [][]binlog.RowChange{edit(1, "created_at", colT0.Add(-60*time.Second-time.Microsecond))}, "not the database clock"},
		{"a stamp that is not a time", [][]binlog.RowChange{edit(1, "created_at", "now")}, "not a time the server set"},
		{"a new order not PLACED", [][]binlog.RowChange{edit(1, "status", "PAID")}, "not PLACED"},
		{"an amount off its lines", [][]binlog.RowChange{edit(1, "amount_cents", int64(499))}, "come to 500"},
		{"a line priced off its stock", [][]binlog.RowChange{edit(2, "price_cents", int64(249))}, "the stock row of \"S\" says 250"},
		{"a stock row repriced", [][]binlog.RowChange{edit(0, "price_cents", int64(1))}, "does not reprice"},
		{"a fingerprint that is no sha256", [][]binlog.RowChange{edit(3, "request_hash", strings.Repeat("ab", 31))}, "not a sha256"},
		{"an answer of another amount", [][]binlog.RowChange{edit(3, "response_body",
			`{"order_id":7,"event_id":"e-7","sku":"S","quantity":2,"amount_cents":501}`)}, "amount_cents 501"},
		{"an answer that is no object", [][]binlog.RowChange{edit(3, "response_body", `[1]`)}, "not a JSON object"},
		{"a payload of another quantity", [][]binlog.RowChange{edit(4, "payload", `{"orderId":7,"sku":"S","quantity":1,"amountCents":500}`)}, "quantity 1"},
		{"a payload of another order", [][]binlog.RowChange{edit(4, "payload", `{"orderId":8,"sku":"S","quantity":2,"amountCents":500}`)}, "orderId 8"},
		{"a payload without its amount", [][]binlog.RowChange{edit(4, "payload", `{"orderId":7,"sku":"S","quantity":2}`)}, "amountCents missing"},
		{"a PENDING intent with a lease", [][]binlog.RowChange{edit(4, "lease_until", stampAt(0))}, "has lease_until"},
		{"an intent stamped twice", [][]binlog.RowChange{edit(4, "changed_at", stampAt(time.Microsecond))}, "differ in the insert"},
		{"two lines, listed", [][]binlog.RowChange{listed(`{"orderId":7,"sku":"S","quantity":3,"amountCents":750,` +
			`"lines":[{"sku":"S","quantity":2},{"sku":"S","quantity":1}]}`)}, ""},
		{"two lines, not listed", [][]binlog.RowChange{listed(`{"orderId":7,"sku":"S","quantity":3,"amountCents":750}`)}, "lines missing"},
		{"two lines, listed otherwise", [][]binlog.RowChange{listed(`{"orderId":7,"sku":"S","quantity":3,"amountCents":750,` +
			`"lines":[{"sku":"S","quantity":1},{"sku":"S","quantity":2}]}`)}, "lines"},
		{"a mark with its sent time", [][]binlog.RowChange{sent(stampAt(time.Second), stampAt(time.Second))}, ""},
		{"a mark without a sent time", [][]binlog.RowChange{sent(nil, stampAt(time.Second))}, "sets sent_at"},
		{"a mark with another clock's sent time", [][]binlog.RowChange{sent(stampAt(2*time.Second), stampAt(time.Second))}, "sets sent_at"},
		{"a notification of its event", [][]binlog.RowChange{{note("order 7 placed (event e-7)", stampAt(0))}}, ""},
		{"a notification of another field", [][]binlog.RowChange{{note("order 1 placed (event e-7)", stampAt(0))}}, "its body is"},
		{"an id assigned twice", [][]binlog.RowChange{goodOrder(), goodOrder()[2:3]}, "was inserted before"},
		{"the marker", [][]binlog.RowChange{{ins("ofa_marker", img{"id": int64(1), "tool": "orderflow-audit", "run_id": "r1", "created_at": stampAt(0)})}}, ""},
		{"a marker of another run", [][]binlog.RowChange{{ins("ofa_marker", img{"id": int64(1), "tool": "orderflow-audit", "run_id": "r2",
			"created_at": stampAt(0)})}}, "not this run's"},
		{"a marker of another tool", [][]binlog.RowChange{{ins("ofa_marker", img{"id": int64(1), "tool": "other", "run_id": "r1",
			"created_at": stampAt(0)})}}, "row 1 of \"orderflow-audit\""},
		{"a marker of row 2", [][]binlog.RowChange{{ins("ofa_marker", img{"id": int64(2), "tool": "orderflow-audit", "run_id": "r1",
			"created_at": stampAt(0)})}}, "row 1 of \"orderflow-audit\""},
		{"a marker made an hour later", [][]binlog.RowChange{{ins("ofa_marker", img{"id": int64(1), "tool": "orderflow-audit", "run_id": "r1",
			"created_at": stampAt(time.Hour)})}}, "row 1 of \"orderflow-audit\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := columnReasons(tc.txs...)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("reasons %q; want none", got)
			case tc.want != "" && !slices.ContainsFunc(got, func(r string) bool { return strings.Contains(r, tc.want) }):
				t.Fatalf("reasons %q; want one saying %q", got, tc.want)
			}
		})
	}
}

// TestColumnsWholeSeconds: a timestamp column whose values all fall on a
// whole second keeps no microseconds, once there are enough of them.
func TestColumnsWholeSeconds(t *testing.T) {
	notes := func(n, exact int) []binlog.RowChange {
		var out []binlog.RowChange
		for i := range n {
			at := stampAt(time.Duration(i) * time.Second)
			if i < exact {
				at = at.Truncate(time.Second)
			}
			out = append(out, ins("notification", img{"id": int64(i + 1), "consumer": "c", "event_id": "e-7", "order_id": int64(7),
				"body": "order 7 placed (event e-7)", "created_at": at}))
		}
		return out
	}
	for _, tc := range []struct {
		n, exact int
		fail     bool
	}{{3, 3, false}, {4, 4, true}, {4, 3, false}, {5, 5, true}} {
		got := columnReasons(notes(tc.n, tc.exact))
		if fail := len(got) == 1 && strings.Contains(got[0], "keeps no microseconds"); fail != tc.fail || (!fail && len(got) > 0) {
			t.Errorf("%d values, %d on a whole second: reasons %q; want a failure: %v", tc.n, tc.exact, got, tc.fail)
		}
	}
}
