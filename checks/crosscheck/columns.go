package crosscheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// Every column is somebody's business. The event cross-checks hold the
// columns an actor's event names (an order's sku, a claim's token, an
// inbox row's record); the checks here hold the columns no event names to
// what the contract derives for them from the rest of the row and its
// transaction: an intent's payload from its order, an answer from the
// order it names, a notification's body from its event, a line's price
// from its stock row, a timestamp from the change that set it (sent_at
// with SENT, created_at with the insert) on the database clock and to the
// microsecond. ColumnRules lists, for every column of the reference
// schema, the rules that hold it; a test holds the list to the
// migrations and edits each column in a real run's binlog.

// ColumnRules names, table by table, the rules that hold each column of
// the reference schema (migrations/*.sql) in the binlog: the event
// cross-checks, witness-column (this file), the end state's digests and
// invariants. A column the server assigns (a surrogate id) is held to be
// unique among the rows of its table.
var ColumnRules = map[string]map[string][]string{
	"ofa_marker": {"id": {"witness-foreign"}, "tool": {"witness-foreign"}, "run_id": {"witness-foreign"},
		"created_at": {"witness-foreign"}},
	"stock": {"sku": {"witness-write", "witness-order-tx"}, "quantity": {"witness-write", "witness-order-tx"},
		"price_cents": {"witness-write", "witness-column"}},
	"orders": {"id": {"witness-order-tx"}, "principal": {"witness-order-tx"}, "sku": {"witness-order-tx"},
		"quantity": {"witness-order-tx"}, "amount_cents": {"witness-column", "witness-table-digest"},
		"status": {"witness-column", "witness-order-tx"}, "created_at": {"witness-column"}},
	"order_lines": {"id": {"witness-column"}, "order_id": {"witness-order-tx"}, "sku": {"witness-order-tx"},
		"quantity": {"witness-order-tx"}, "price_cents": {"witness-order-tx", "witness-column"}},
	"idempotency_records": {"id": {"witness-column"}, "principal": {"witness-order-tx"}, "idem_key": {"witness-order-tx"},
		"request_hash": {"witness-column"}, "status_code": {"witness-order-tx"}, "response_body": {"witness-column", "witness-answer"},
		"order_id": {"witness-order-tx"}, "created_at": {"witness-column"}},
	"outbox": {"id": {"witness-column"}, "event_id": {"witness-order-tx", "witness-claim", "witness-mark"},
		"aggregate_id": {"witness-order-tx"}, "aggregate_version": {"witness-order-tx"}, "payload": {"witness-column", "witness-publish"},
		"state": {"witness-order-tx", "witness-claim", "witness-mark"}, "claim_version": {"witness-order-tx", "witness-claim", "witness-mark"},
		"claim_id": {"witness-claim", "witness-mark", "witness-column"}, "lease_until": {"witness-claim", "witness-lease-clock", "witness-column"},
		"created_at": {"witness-column"}, "sent_at": {"witness-column"}, "changed_at": {"witness-lease-clock", "witness-column"}},
	"inbox": {"consumer": {"witness-effect-tx"}, "event_id": {"witness-effect-tx"}, "topic": {"witness-effect-tx"},
		"part": {"witness-effect-tx"}, "msg_offset": {"witness-effect-tx"}, "received_at": {"witness-column"}},
	"notification": {"id": {"witness-effect-tx"}, "consumer": {"witness-effect-tx"}, "event_id": {"witness-effect-tx"},
		"order_id": {"witness-effect-tx"}, "body": {"witness-column"}, "created_at": {"witness-column"}},
}

// stampSlack is how far a timestamp the server set in a transaction may
// lie from the transaction's time in the binlog (whole seconds, taken at
// one of its statements): a statement waits for locks and a paused server
// at most this long in any run of ours. A value from another clock (an
// actor's, skewed) lies further.
const stampSlack = 60 * time.Second

// minStampsForPrecision is how many values of a timestamp column a
// scenario needs before all of them on a whole second says the column
// keeps no microseconds: NOW(6) lands on one with odds of one in a
// million.
const minStampsForPrecision = 4

// stamped are the timestamp columns the server sets when the row is
// inserted (their DEFAULT CURRENT_TIMESTAMP(6)).
var stamped = map[string][]string{
	"orders": {"created_at"}, "idempotency_records": {"created_at"}, "outbox": {"created_at", "changed_at"},
	"inbox": {"received_at"}, "notification": {"created_at"},
}

// surrogates are the columns the server assigns (AUTO_INCREMENT) that no
// event names: any value is right once, none twice.
var surrogates = map[string]string{"order_lines": "id", "idempotency_records": "id", "outbox": "id"}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// columns runs the column checks over every row change of the scenario,
// explained or not.
func (s *scenarioCheck) columns() {
	wholeSeconds := map[[2]string][2]int{} // table, column: values on a whole second, values
	ids := map[string]map[string]bool{}
	for _, ch := range s.db.changes {
		c := ch.c
		var problems []string
		if c.Op == binlog.Insert {
			for _, col := range stamped[c.Table] {
				v, isTime := c.After[col].(time.Time)
				if !isTime {
					problems = append(problems, fmt.Sprintf("%s is %s, not a time the server set", col, show(c.After[col])))
					continue
				}
				if d := v.Sub(ch.tx.Time); d < -stampSlack || d > stampSlack+time.Second {
					problems = append(problems, fmt.Sprintf("%s is %s, %s from the transaction's time %s: not the database clock at the insert",
						col, show(v), d.Round(time.Millisecond), ch.tx.Time.UTC().Format(time.DateTime)))
				}
				k := [2]string{c.Table, col}
				n := wholeSeconds[k]
				if v.Nanosecond() == 0 {
					n[0]++
				}
				n[1]++
				wholeSeconds[k] = n
			}
			if col, ok := surrogates[c.Table]; ok {
				if ids[c.Table] == nil {
					ids[c.Table] = map[string]bool{}
				}
				if k := show(c.After[col]); ids[c.Table][k] {
					problems = append(problems, fmt.Sprintf("%s %s was inserted before: a key the server assigns once", col, k))
				} else {
					ids[c.Table][k] = true
				}
			}
		}
		problems = append(problems, s.rowColumns(ch)...)
		if len(problems) > 0 {
			s.add(finding.Reason{Rule: "witness-column", Status: finding.Fail, Witness: txWhere(*ch.tx),
				Message: fmt.Sprintf("the %s of %s is not what the contract derives: %s", describe(c), rowName(c), strings.Join(problems, "; "))})
		}
	}
	for _, k := range orderedPairs(wholeSeconds) {
		if n := wholeSeconds[k]; n[1] >= minStampsForPrecision && n[0] == n[1] {
			s.add(finding.Reason{Rule: "witness-column", Status: finding.Fail, Witness: "database " + s.db.schema,
				Message: fmt.Sprintf("all %d values of %s.%s are on a whole second: the column keeps no microseconds, "+
					"where the schema stamps rows to the microsecond (TIMESTAMP(6))", n[1], k[0], k[1])})
		}
	}
}

// markerTool is the tool name the marker row carries.
const markerTool = "orderflow-audit"

// marker checks that the scenario database's ofa_marker row carries the
// run id, and is the row the tool writes: id 1, its name, the database
// clock's time.
func (s *scenarioCheck) marker() {
	for i := range s.db.txs {
		t := &s.db.txs[i]
		for _, c := range t.Changes {
			if c.Table != "ofa_marker" || c.Op != binlog.Insert {
				continue
			}
			if id, _ := c.After["run_id"].(string); id != s.runID {
				s.add(finding.Reason{Rule: "witness-foreign", Status: finding.Fail, Witness: txWhere(*t),
					Message: fmt.Sprintf("database %s is marked as run %q's, not this run's %q", s.db.schema, id, s.runID)})
			}
			at, _ := c.After["created_at"].(time.Time)
			if d := at.Sub(t.Time); !eqInt(c.After["id"], 1) || !eqStr(c.After["tool"], markerTool) || d < -stampSlack || d > stampSlack+time.Second {
				s.add(finding.Reason{Rule: "witness-foreign", Status: finding.Fail, Witness: txWhere(*t),
					Message: fmt.Sprintf("database %s's marker is row %s of tool %s made at %s: the tool marks its databases with row 1 "+
						"of %q, made on the database clock when it creates them", s.db.schema, show(c.After["id"]), show(c.After["tool"]),
						show(c.After["created_at"]), markerTool)})
			}
		}
	}
}

// rowColumns holds the columns of one row change that the contract
// derives from the row itself and its transaction.
func (s *scenarioCheck) rowColumns(ch *change) []string {
	c, a := ch.c, ch.c.After
	switch {
	case is(c, "outbox", binlog.Insert):
		return intentColumns(a, s.db.byTx[ch.tx])
	case is(c, "outbox", binlog.Update):
		return outboxUpdateColumns(c)
	case is(c, "notification", binlog.Insert):
		oid, _ := vInt(a["order_id"])
		eid, _ := vStr(a["event_id"])
		if want := evidence.NotificationBody(oid, eid); !eqStr(a["body"], want) {
			return []string{fmt.Sprintf("its body is %s; for order %d and event %s it is %q", show(a["body"]), oid, eid, want)}
		}
	case is(c, "orders", binlog.Insert):
		return orderColumns(a, s.db.byTx[ch.tx])
	case is(c, "order_lines", binlog.Insert):
		if st := txRow(s.db.byTx[ch.tx], "stock", binlog.Update, "sku", a["sku"]); st != nil && !sameValue(st.After["price_cents"], a["price_cents"]) {
			return []string{fmt.Sprintf("its price_cents is %s, the stock row of %s says %s", show(a["price_cents"]), show(a["sku"]),
				show(st.After["price_cents"]))}
		}
	case is(c, "stock", binlog.Update):
		if !sameValue(c.Before["price_cents"], a["price_cents"]) {
			return []string{fmt.Sprintf("its price_cents changed from %s to %s: an order takes stock, it does not reprice it",
				show(c.Before["price_cents"]), show(a["price_cents"]))}
		}
	case is(c, "idempotency_records", binlog.Insert):
		return recordColumns(a, s.db.byTx[ch.tx])
	}
	return nil
}

// intentColumns: a PENDING intent carries no token, lease or sent time;
// it was stamped once (created_at = changed_at); its payload is a JSON
// object naming its aggregate, and, written beside its order, the order's
// sku, quantity, amount and lines, or, beside a status change, that
// status and version.
func intentColumns(a map[string]binlog.Value, tx []*change) []string {
	var problems []string
	if eqStr(a["state"], evidence.StatePending) {
		for _, col := range []string{"claim_id", "lease_until", "sent_at"} {
			if a[col] != nil {
				problems = append(problems, fmt.Sprintf("a PENDING intent has %s %s", col, show(a[col])))
			}
		}
	}
	if !sameValue(a["created_at"], a["changed_at"]) {
		problems = append(problems, fmt.Sprintf("created_at %s and changed_at %s differ in the insert that set both", show(a["created_at"]), show(a["changed_at"])))
	}
	p, err := decodeObject(a["payload"])
	if err != nil {
		return append(problems, "its payload is not a JSON object: "+err.Error())
	}
	agg, _ := vInt(a["aggregate_id"])
	want := map[string]any{"orderId": agg}
	if o := txRow(tx, "orders", binlog.Insert, "id", agg); o != nil {
		want["sku"], want["quantity"], want["amountCents"] = o.After["sku"], o.After["quantity"], o.After["amount_cents"]
		if lines := txLines(tx, agg); len(lines) > 1 {
			want["lines"] = lines
		}
	} else if o := txRow(tx, "orders", binlog.Update, "id", agg); o != nil {
		want["status"], want["aggregateVersion"] = o.After["status"], a["aggregate_version"]
	} else {
		// An intent written apart from its order (a scenario's seed, whose
		// payload its event holds by sha256): nothing to derive it from.
		return problems
	}
	return append(problems, fieldProblems("its payload", p, want)...)
}

// outboxUpdateColumns: an update that sets an intent SENT sets sent_at
// with it, on the server's clock of that statement (changed_at); any
// other update leaves sent_at alone.
func outboxUpdateColumns(c *binlog.RowChange) []string {
	a, b := c.After, c.Before
	switch {
	case eqStr(a["state"], evidence.StateSent) && !eqStr(b["state"], evidence.StateSent):
		if a["sent_at"] == nil || !sameValue(a["sent_at"], a["changed_at"]) {
			return []string{fmt.Sprintf("it was set SENT with sent_at %s; the statement that sets SENT sets sent_at, at its changed_at %s",
				show(a["sent_at"]), show(a["changed_at"]))}
		}
	case !sameValue(b["sent_at"], a["sent_at"]):
		return []string{fmt.Sprintf("sent_at changed from %s to %s in an update that does not set the intent SENT", show(b["sent_at"]), show(a["sent_at"]))}
	}
	return nil
}

// orderColumns: an order is PLACED when written, and its amount is the
// sum of its lines' quantity times unit price (when its lines are in its
// transaction).
func orderColumns(a map[string]binlog.Value, tx []*change) []string {
	var problems []string
	if !eqStr(a["status"], "PLACED") {
		problems = append(problems, fmt.Sprintf("a new order's status is %s, not PLACED", show(a["status"])))
	}
	id, _ := vInt(a["id"])
	var sum int64
	n := 0
	for _, ch := range tx {
		if is(ch.c, "order_lines", binlog.Insert) && eqInt(ch.c.After["order_id"], id) {
			q, _ := vInt(ch.c.After["quantity"])
			p, _ := vInt(ch.c.After["price_cents"])
			sum += q * p
			n++
		}
	}
	if n > 0 && !eqInt(a["amount_cents"], sum) {
		problems = append(problems, fmt.Sprintf("its amount_cents is %s; its %d line(s) come to %d", show(a["amount_cents"]), n, sum))
	}
	return problems
}

// recordColumns: an idempotency record keeps a sha256 fingerprint of the
// request, and the answer it stores names its order, and, for the order
// written beside it, that order's event, sku, quantity and amount.
func recordColumns(a map[string]binlog.Value, tx []*change) []string {
	var problems []string
	if h, _ := vStr(a["request_hash"]); !sha256Hex.MatchString(h) {
		problems = append(problems, fmt.Sprintf("its request_hash %s is not a sha256 in hex", show(a["request_hash"])))
	}
	body, err := decodeObject(a["response_body"])
	if err != nil {
		return append(problems, "its response_body is not a JSON object: "+err.Error())
	}
	id, _ := vInt(a["order_id"])
	want := map[string]any{"order_id": id}
	if o := txRow(tx, "orders", binlog.Insert, "id", id); o != nil {
		want["event_id"] = evidence.EventIDFor(id)
		want["sku"], want["quantity"], want["amount_cents"] = o.After["sku"], o.After["quantity"], o.After["amount_cents"]
	}
	return append(problems, fieldProblems("its response_body", body, want)...)
}

// txRow returns the first row change of tx on table with op whose after
// image has col = v.
func txRow(tx []*change, table string, op binlog.Op, col string, v any) *binlog.RowChange {
	for _, ch := range tx {
		if is(ch.c, table, op) && sameValue(ch.c.After[col], v) {
			return ch.c
		}
	}
	return nil
}

// txLines returns the lines of order id in tx as an intent's payload
// lists them: [{sku, quantity}] in insert order.
func txLines(tx []*change, id int64) []any {
	var out []any
	for _, ch := range tx {
		if is(ch.c, "order_lines", binlog.Insert) && eqInt(ch.c.After["order_id"], id) {
			out = append(out, map[string]any{"sku": ch.c.After["sku"], "quantity": ch.c.After["quantity"]})
		}
	}
	return out
}

// decodeObject reads a JSON object column, numbers kept exact.
func decodeObject(v any) (map[string]any, error) {
	s, ok := vStr(v)
	if !ok {
		return nil, fmt.Errorf("%s", show(v))
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("null")
	}
	return m, nil
}

// fieldProblems compares the fields of a decoded JSON object with the
// values want derives for them (binlog values, or lists of objects of
// them); a field want names and the object lacks is a problem too.
func fieldProblems(what string, got map[string]any, want map[string]any) []string {
	var problems []string
	for _, k := range orderedKeys(want) {
		if g, ok := got[k]; !ok || !jsonEqual(g, want[k]) {
			problems = append(problems, fmt.Sprintf("%s has %s %s; its row says %s", what, k, jsonText(g, ok), jsonText(want[k], true)))
		}
	}
	return problems
}

// jsonEqual compares a decoded JSON value with a value from the binlog.
func jsonEqual(got, want any) bool {
	switch w := want.(type) {
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !jsonEqual(g[i], w[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		return ok && len(fieldProblems("", g, w)) == 0
	}
	if n, ok := got.(json.Number); ok {
		return n.String() == show(want)
	}
	if s, ok := got.(string); ok {
		return eqStr(want, s)
	}
	return false
}

func jsonText(v any, present bool) string {
	if !present {
		return "missing"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return show(v)
	}
	return string(b)
}

// sameValue compares two column values as the binlog decoded them.
func sameValue(a, b any) bool {
	ta, okA := a.(time.Time)
	tb, okB := b.(time.Time)
	if okA || okB {
		return okA && okB && ta.Equal(tb)
	}
	return show(a) == show(b)
}

// rowName names a row for a message: its event id, order id or id.
func rowName(c *binlog.RowChange) string {
	img := c.After
	if img == nil {
		img = c.Before
	}
	for _, col := range []string{"event_id", "order_id", "id", "sku"} {
		if v, ok := img[col]; ok && v != nil {
			return col + " " + show(v)
		}
	}
	return "a row"
}

func orderedPairs[V any](m map[[2]string]V) [][2]string {
	out := make([][2]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0]+"."+a[1], b[0]+"."+b[1]) })
	return out
}

// WithRows returns a copy of w whose binlog transactions of database
// schema edit has changed (the copy's own transactions, row changes and
// images): what a pipeline that wrote other values would have left. The
// tests of the rules use it to edit a real run's binlog column by column.
func (w *Witnesses) WithRows(schema string, edit func(txs []binlog.Transaction)) *Witnesses {
	cp := *w
	if w.db == nil {
		return &cp
	}
	db := *w.db
	db.bySchema = maps.Clone(w.db.bySchema)
	txs := slices.Clone(db.bySchema[schema])
	for i := range txs {
		txs[i].Changes = slices.Clone(txs[i].Changes)
		for j := range txs[i].Changes {
			c := &txs[i].Changes[j]
			c.Before, c.After = maps.Clone(c.Before), maps.Clone(c.After)
		}
	}
	edit(txs)
	db.bySchema[schema] = txs
	cp.db = &db
	return &cp
}
