package orders

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

const (
	testSKU   = "SKU-1"
	testPrice = 250
)

// syncBuffer is the event log's writer: the server goroutines write, the
// test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

type bundle struct {
	t      *testing.T
	db     *sql.DB
	dbName string
	log    *syncBuffer
	evlog  *evidence.Log
	faults *fault.Injector
	svc    *Service
	client *Client
	token  string
}

// setup creates a scratch database with stock 10 of testSKU, a service
// behind an httptest server and a valid token for "alice".
func setup(t *testing.T, mods ...func(*Config)) *bundle {
	t.Helper()
	sc := infratest.Scratch(t)
	b := &bundle{t: t, db: sc.DB, dbName: sc.Name, log: &syncBuffer{}, faults: &fault.Injector{}}
	b.exec(`INSERT INTO stock (sku, quantity, price_cents) VALUES (?, 10, ?)`, testSKU, testPrice)
	b.svc, b.client = b.serve(mods...)
	var err error
	b.token, err = SignToken(testSecret, "alice", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serve starts one more service on the bundle's database and log.
func (b *bundle) serve(mods ...func(*Config)) (*Service, *Client) {
	b.t.Helper()
	cfg := Config{
		DB:     b.db,
		Secret: testSecret,
		Log:    b.eventLog(),
		Faults: b.faults,
	}
	for _, m := range mods {
		m(&cfg)
	}
	svc, err := New(cfg)
	if err != nil {
		b.t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(svc)
	b.t.Cleanup(srv.Close)
	return svc, &Client{BaseURL: srv.URL, HTTP: srv.Client()}
}

// eventLog is the bundle's one event log: services of one test share it, as
// one log file has one seq counter.
func (b *bundle) eventLog() *evidence.Log {
	if b.evlog == nil {
		b.evlog = evidence.NewLog(b.log, "test-run", "orders-test", nil)
	}
	return b.evlog
}

func (b *bundle) exec(q string, args ...any) {
	b.t.Helper()
	if _, err := b.db.ExecContext(b.t.Context(), q, args...); err != nil {
		b.t.Fatalf("%s: %v", q, err)
	}
}

func (b *bundle) count(q string, args ...any) int64 {
	b.t.Helper()
	var n int64
	if err := b.db.QueryRowContext(b.t.Context(), q, args...).Scan(&n); err != nil {
		b.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func (b *bundle) place(key string, req PlaceRequest) Result {
	b.t.Helper()
	res, err := b.client.Place(b.t.Context(), b.token, key, req)
	if err != nil {
		b.t.Fatalf("Place: %v", err)
	}
	return res
}

// state is every row count of the schema plus the stock of each SKU.
type state struct {
	Rows  map[string]int64
	Stock map[string]int64
}

func (b *bundle) state() state {
	b.t.Helper()
	s := state{Rows: map[string]int64{}, Stock: map[string]int64{}}
	for _, tbl := range []string{"stock", "orders", "order_lines", "idempotency_records", "outbox", "inbox", "notification"} {
		s.Rows[tbl] = b.count("SELECT COUNT(*) FROM " + tbl)
	}
	rows, err := b.db.QueryContext(b.t.Context(), `SELECT sku, quantity FROM stock`)
	if err != nil {
		b.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var sku string
		var q int64
		if err := rows.Scan(&sku, &q); err != nil {
			b.t.Fatal(err)
		}
		s.Stock[sku] = q
	}
	if err := rows.Err(); err != nil {
		b.t.Fatal(err)
	}
	return s
}

// events reads the log (schema-valid lines, strict decoding, increasing
// seq) and checks that every event names this service.
func (b *bundle) events() []evidence.Event {
	b.t.Helper()
	es, truncated := evidencetest.Read(b.t, bytes.NewReader(b.log.Bytes()))
	if truncated {
		b.t.Fatal("event log ends in a truncated line")
	}
	for _, e := range es {
		if e.Actor != DefaultActor {
			b.t.Fatalf("seq %d: actor %q, want %q", e.Seq, e.Actor, DefaultActor)
		}
	}
	return es
}

func kinds(es []evidence.Event) []evidence.Kind {
	out := make([]evidence.Kind, len(es))
	for i, e := range es {
		out[i] = e.Kind
	}
	return out
}

func lastEvent(t *testing.T, es []evidence.Event) evidence.Event {
	t.Helper()
	if len(es) == 0 {
		t.Fatal("no events")
	}
	return es[len(es)-1]
}

var allWrites = []string{evidence.WriteStock, evidence.WriteOrders, evidence.WriteOrderLines, evidence.WriteIdempotency, evidence.WriteOutbox}

func TestPlaceCommitsFiveWritesInOneTransaction(t *testing.T) {
	b := setup(t)
	res := b.place("k-1", PlaceRequest{SKU: testSKU, Quantity: 2})
	if res.Status != http.StatusCreated || res.Order == nil {
		t.Fatalf("status = %d (%s); want 201", res.Status, res.Body)
	}
	want := PlaceResponse{OrderID: 1, EventID: "e-1", SKU: testSKU, Quantity: 2, AmountCents: 2 * testPrice, StockLeft: 8}
	if !reflect.DeepEqual(*res.Order, want) {
		t.Errorf("answer = %+v; want %+v", *res.Order, want)
	}
	got := b.state()
	wantRows := map[string]int64{"stock": 1, "orders": 1, "order_lines": 1, "idempotency_records": 1, "outbox": 1, "inbox": 0, "notification": 0}
	if !reflect.DeepEqual(got.Rows, wantRows) || got.Stock[testSKU] != 8 {
		t.Errorf("state = %+v; want rows %v and stock 8", got, wantRows)
	}

	var (
		principal, sku   string
		qty              int
		amount, linePric int64
	)
	if err := b.db.QueryRowContext(t.Context(),
		`SELECT o.principal, o.sku, o.quantity, o.amount_cents, l.price_cents FROM orders o JOIN order_lines l ON l.order_id = o.id WHERE o.id = 1`,
	).Scan(&principal, &sku, &qty, &amount, &linePric); err != nil {
		t.Fatal(err)
	}
	if principal != "alice" || sku != testSKU || qty != 2 || amount != 500 || linePric != testPrice {
		t.Errorf("order row = %s %s %d %d %d; want alice %s 2 500 %d", principal, sku, qty, amount, linePric, testSKU, testPrice)
	}

	var (
		aggID, version int64
		payload, st    string
	)
	if err := b.db.QueryRowContext(t.Context(),
		`SELECT aggregate_id, aggregate_version, payload, state FROM outbox WHERE event_id = 'e-1'`,
	).Scan(&aggID, &version, &payload, &st); err != nil {
		t.Fatal(err)
	}
	var p OutboxPayload
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		t.Fatalf("outbox payload %s: %v", payload, err)
	}
	if aggID != 1 || version != 1 || st != evidence.StatePending || !reflect.DeepEqual(p, OutboxPayload{OrderID: 1, SKU: testSKU, Quantity: 2, AmountCents: 500}) {
		t.Errorf("outbox = %d v%d %s %+v; want 1 v1 PENDING {1 %s 2 500}", aggID, version, st, p, testSKU)
	}

	var stored string
	var code int
	if err := b.db.QueryRowContext(t.Context(),
		`SELECT response_body, status_code FROM idempotency_records WHERE principal = 'alice' AND idem_key = 'k-1'`,
	).Scan(&stored, &code); err != nil {
		t.Fatal(err)
	}
	if stored != string(res.Body) || code != 201 {
		t.Errorf("stored answer = %d %s; want 201 %s", code, stored, res.Body)
	}

	es := b.events()
	if len(es) != 1 {
		t.Fatalf("events = %v; want one order_committed", kinds(es))
	}
	e := es[0]
	if e.Kind != evidence.KindOrderCommitted || *e.OrderID != 1 || e.EventID != "e-1" || e.Key != "k-1" ||
		e.SKU != testSKU || *e.Quantity != 2 || *e.Stock != 8 || e.Status != 201 || !reflect.DeepEqual(e.Writes, allWrites) {
		t.Errorf("event = %+v; want order_committed 1 e-1 k-1 stock 8 writes %v", e, allWrites)
	}
}

// readOutboxRow returns every column of the outbox row of eventID as text.
func (b *bundle) readOutboxRow(eventID string) []sql.NullString {
	b.t.Helper()
	const cols = `id, event_id, aggregate_id, aggregate_version, payload, state, claim_version, claim_id, lease_until, created_at, sent_at`
	row := make([]sql.NullString, strings.Count(cols, ",")+1)
	ptrs := make([]any, len(row))
	for i := range row {
		ptrs[i] = &row[i]
	}
	if err := b.db.QueryRowContext(b.t.Context(), `SELECT `+cols+` FROM outbox WHERE event_id = ?`, eventID).Scan(ptrs...); err != nil {
		b.t.Fatalf("read outbox row %s: %v", eventID, err)
	}
	return row
}

// The commit boundary: the fifth write hits the unique key of a seeded
// decoy, and the four writes before it must go with it.
func TestOutboxConflictRollsBackAllFiveWrites(t *testing.T) {
	b := setup(t)
	b.exec(`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state) VALUES ('e-1', -1, 1, '{"decoy":true}', 'PENDING')`)
	decoy := b.readOutboxRow("e-1")
	before := b.state()

	res := b.place("k-boundary", PlaceRequest{SKU: testSKU, Quantity: 2})
	if res.Status != http.StatusInternalServerError {
		t.Fatalf("status = %d (%s); want 500", res.Status, res.Body)
	}
	if after := b.state(); !reflect.DeepEqual(after, before) {
		t.Errorf("state after the rollback = %+v; want unchanged %+v", after, before)
	}
	if got := b.readOutboxRow("e-1"); !reflect.DeepEqual(got, decoy) {
		t.Errorf("decoy row = %v; want untouched %v", got, decoy)
	}
	es := b.events()
	if len(es) != 1 {
		t.Fatalf("events = %v; want one order_rolled_back", kinds(es))
	}
	e := es[0]
	if e.Kind != evidence.KindOrderRolledBack || e.OrderID == nil || *e.OrderID != 1 || e.EventID != "e-1" ||
		e.Key != "k-boundary" || e.Status != 500 || !strings.Contains(e.Err, "uk_outbox_event") {
		t.Errorf("event = %+v; want order_rolled_back order 1 e-1 status 500 naming uk_outbox_event", e)
	}

	// Nothing was stored for the key: a retry places a fresh order (id 2,
	// as AUTO_INCREMENT does not roll back) and the service is not wedged.
	res = b.place("k-boundary", PlaceRequest{SKU: testSKU, Quantity: 2})
	if res.Status != http.StatusCreated || res.Order.OrderID != 2 || res.Order.StockLeft != 8 {
		t.Fatalf("retry = %d %s; want 201 order 2 stock 8", res.Status, res.Body)
	}
}

func TestIdempotentReplayAndKeyReuse(t *testing.T) {
	b := setup(t)
	first := b.place("k-1", PlaceRequest{SKU: testSKU, Quantity: 2})
	if first.Status != http.StatusCreated {
		t.Fatalf("first status = %d (%s)", first.Status, first.Body)
	}
	after := b.state()

	// The same request with other whitespace and key order is the same
	// request.
	replay, err := b.client.PlaceRaw(t.Context(), b.token, "k-1", []byte(` { "quantity": 2, "sku": "SKU-1" } `))
	if err != nil {
		t.Fatal(err)
	}
	if replay.Status != http.StatusCreated || !bytes.Equal(replay.Body, first.Body) {
		t.Errorf("replay = %d %s; want 201 %s", replay.Status, replay.Body, first.Body)
	}
	if got := b.state(); !reflect.DeepEqual(got, after) {
		t.Errorf("state after replay = %+v; want %+v", got, after)
	}

	other := b.place("k-1", PlaceRequest{SKU: testSKU, Quantity: 3})
	if other.Status != http.StatusUnprocessableEntity {
		t.Errorf("key reuse status = %d (%s); want 422", other.Status, other.Body)
	}
	if got := b.state(); !reflect.DeepEqual(got, after) {
		t.Errorf("state after key reuse = %+v; want %+v", got, after)
	}

	// The key belongs to its principal: bob's k-1 is a new order.
	bobToken, err := SignToken(testSecret, "bob", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	bob, err := b.client.Place(t.Context(), bobToken, "k-1", PlaceRequest{SKU: testSKU, Quantity: 3})
	if err != nil {
		t.Fatal(err)
	}
	if bob.Status != http.StatusCreated || bob.Order.OrderID == first.Order.OrderID {
		t.Errorf("bob's k-1 = %d %s; want a new 201 order", bob.Status, bob.Body)
	}

	es := b.events()
	want := []evidence.Kind{evidence.KindOrderCommitted, evidence.KindOrderReplayed, evidence.KindOrderRejected, evidence.KindOrderCommitted}
	if !reflect.DeepEqual(kinds(es), want) {
		t.Fatalf("events = %v; want %v", kinds(es), want)
	}
	if e := es[1]; *e.OrderID != first.Order.OrderID || e.Status != 201 || e.Key != "k-1" {
		t.Errorf("replay event = %+v; want order %d status 201", e, first.Order.OrderID)
	}
	if e := es[2]; e.Status != 422 {
		t.Errorf("reuse event status = %d; want 422", e.Status)
	}
}

func TestConcurrentDuplicatesCreateOneOrder(t *testing.T) {
	b := setup(t)
	const n = 10
	results := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := b.client.Place(t.Context(), b.token, "same-key", PlaceRequest{SKU: testSKU, Quantity: 1})
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	ids := map[int64]bool{}
	for i, r := range results {
		switch r.Status {
		case http.StatusCreated:
			ids[r.Order.OrderID] = true
		case http.StatusConflict:
		default:
			t.Errorf("request %d: status %d (%s); want 201 or 409", i, r.Status, r.Body)
		}
	}
	if len(ids) != 1 {
		t.Errorf("distinct order ids among 201s = %v; want exactly one", ids)
	}
	st := b.state()
	if st.Rows["orders"] != 1 || st.Rows["outbox"] != 1 || st.Rows["idempotency_records"] != 1 || st.Stock[testSKU] != 9 {
		t.Errorf("state = %+v; want one order, one intent, one record, stock 9", st)
	}
	es := b.events()
	committed := 0
	for _, e := range es {
		if e.Kind == evidence.KindOrderCommitted {
			committed++
		}
	}
	if len(es) != n || committed != 1 {
		t.Errorf("events = %v; want %d events, one order_committed", kinds(es), n)
	}
}

// waitBlocked waits until n stock decrements of this database are
// running (they block on the row lock holdStock took).
func (b *bundle) waitBlocked(n int64) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := b.count(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
WHERE DB = ? AND COMMAND IN ('Query', 'Execute') AND INFO LIKE 'UPDATE stock%'`, b.dbName)
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%d stock decrements running; want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holdStock locks the stock row of testSKU until the returned func runs.
func (b *bundle) holdStock() (release func()) {
	b.t.Helper()
	tx, err := b.db.BeginTx(b.t.Context(), nil)
	if err != nil {
		b.t.Fatal(err)
	}
	var q int
	if err := tx.QueryRowContext(b.t.Context(), `SELECT quantity FROM stock WHERE sku = ? FOR UPDATE`, testSKU).Scan(&q); err != nil {
		_ = tx.Rollback()
		b.t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback() }) }
	b.t.Cleanup(release)
	return release
}

// A second request with a key in flight in this service gets 409 at once.
func TestKeyInFlightIsConflict(t *testing.T) {
	b := setup(t)
	release := b.holdStock()
	first := make(chan Result, 1)
	go func() {
		res, err := b.client.Place(t.Context(), b.token, "k-slow", PlaceRequest{SKU: testSKU, Quantity: 1})
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	b.waitBlocked(1)

	// The answer must not wait for the first request: a bound turns a
	// regression into a failure instead of a lock-wait timeout.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	second, err := b.client.Place(ctx, b.token, "k-slow", PlaceRequest{SKU: testSKU, Quantity: 1})
	cancel()
	if err != nil || second.Status != http.StatusConflict {
		t.Errorf("second = %d (%s), %v; want 409 at once while the first is in flight", second.Status, second.Body, err)
	}
	release()
	if res := <-first; res.Status != http.StatusCreated {
		t.Fatalf("first status = %d (%s); want 201", res.Status, res.Body)
	}
	es := b.events()
	if want := []evidence.Kind{evidence.KindOrderRejected, evidence.KindOrderCommitted}; !reflect.DeepEqual(kinds(es), want) {
		t.Errorf("events = %v; want %v", kinds(es), want)
	}
}

// Two services (as two processes would) on one database: the in-memory
// guard cannot see the other, the unique key on (principal, key) does.
func TestSameKeyAcrossServicesCreatesOneOrder(t *testing.T) {
	b := setup(t)
	_, other := b.serve()
	release := b.holdStock()
	results := make(chan Result, 2)
	for _, c := range []*Client{b.client, other} {
		go func() {
			res, err := c.Place(t.Context(), b.token, "k-shared", PlaceRequest{SKU: testSKU, Quantity: 1})
			if err != nil {
				t.Error(err)
			}
			results <- res
		}()
	}
	b.waitBlocked(2)
	release()
	r1, r2 := <-results, <-results
	if r1.Status != http.StatusCreated || r2.Status != http.StatusCreated || !bytes.Equal(r1.Body, r2.Body) {
		t.Errorf("answers = %d %s and %d %s; want the same 201 twice", r1.Status, r1.Body, r2.Status, r2.Body)
	}
	st := b.state()
	if st.Rows["orders"] != 1 || st.Rows["order_lines"] != 1 || st.Rows["outbox"] != 1 || st.Stock[testSKU] != 9 {
		t.Errorf("state = %+v; want one order, line and intent, stock 9", st)
	}
	got := kinds(b.events())
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if want := []evidence.Kind{evidence.KindOrderCommitted, evidence.KindOrderReplayed, evidence.KindOrderRolledBack}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v; want %v", got, want)
	}
}

func TestNoOversellUnderConcurrency(t *testing.T) {
	b := setup(t)
	const n = 20
	results := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := b.client.Place(t.Context(), b.token, fmt.Sprintf("k-%d", i), PlaceRequest{SKU: testSKU, Quantity: 1})
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	var accepted, rejected int
	var left []int64
	for i, r := range results {
		switch r.Status {
		case http.StatusCreated:
			accepted++
			left = append(left, r.Order.StockLeft)
		case http.StatusConflict:
			rejected++
			if r.Error != "insufficient stock" {
				t.Errorf("request %d: 409 %q; want insufficient stock", i, r.Error)
			}
		default:
			t.Errorf("request %d: status %d (%s)", i, r.Status, r.Body)
		}
	}
	if accepted != 10 || rejected != 10 {
		t.Errorf("accepted %d, rejected %d; want 10 and 10", accepted, rejected)
	}
	// Each accepted order saw its own stock level: 9, 8, ..., 0, never below.
	sort.Slice(left, func(i, j int) bool { return left[i] < left[j] })
	if want := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !reflect.DeepEqual(left, want) {
		t.Errorf("stock left per accepted order = %v; want %v", left, want)
	}
	st := b.state()
	if st.Stock[testSKU] != 0 || st.Rows["orders"] != 10 || st.Rows["outbox"] != 10 || st.Rows["idempotency_records"] != 10 {
		t.Errorf("state = %+v; want stock 0 and 10 orders, intents, records", st)
	}
	if es := b.events(); len(es) != n {
		t.Errorf("%d events; want %d", len(es), n)
	}
}

func TestTokensAreRefusedWithoutWrites(t *testing.T) {
	b := setup(t)
	now := time.Now()
	sign := func(method jwt.SigningMethod, key any, sub string, exp time.Time) string {
		t.Helper()
		s, err := SignTokenWith(method, key, sub, exp)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	valid := sign(jwt.SigningMethodHS256, testSecret, "alice", now.Add(time.Hour))
	tests := []struct {
		name   string
		header string // the whole Authorization header; "" leaves it out
		reason string
	}{
		{"missing", "", "missing bearer token"},
		{"bad signature", "Bearer " + sign(jwt.SigningMethodHS256, []byte("another-secret-another-secret-xx"), "alice", now.Add(time.Hour)), "bad signature"},
		{"expired", "Bearer " + sign(jwt.SigningMethodHS256, testSecret, "alice", now.Add(-time.Minute)), "expired"},
		{"alg HS512", "Bearer " + sign(jwt.SigningMethodHS512, testSecret, "alice", now.Add(time.Hour)), "invalid token"},
		{"alg none", "Bearer " + sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "alice", now.Add(time.Hour)), "invalid token"},
		{"no exp", "Bearer " + sign(jwt.SigningMethodHS256, testSecret, "alice", time.Time{}), "required claim missing"},
		{"no subject", "Bearer " + sign(jwt.SigningMethodHS256, testSecret, "", now.Add(time.Hour)), "no subject"},
		{"nbf ahead", "Bearer " + signClaims(t, func(c *jwt.RegisteredClaims) { c.NotBefore = jwt.NewNumericDate(now.Add(time.Hour)) }), "not valid yet"},
		{"other issuer", "Bearer " + signClaims(t, func(c *jwt.RegisteredClaims) { c.Issuer = "someone-else" }), "wrong issuer"},
		{"no issuer", "Bearer " + signClaims(t, func(c *jwt.RegisteredClaims) { c.Issuer = "" }), "required claim missing"},
		{"other audience", "Bearer " + signClaims(t, func(c *jwt.RegisteredClaims) { c.Audience = jwt.ClaimStrings{"billing"} }), "wrong audience"},
		{"no audience", "Bearer " + signClaims(t, func(c *jwt.RegisteredClaims) { c.Audience = nil }), "required claim missing"},
		{"malformed", "Bearer not.a.jwt", "malformed"},
		{"not bearer", "Basic " + valid, "not a bearer token"},
		{"tampered payload", "Bearer " + tamper(t, valid), "invalid token"},
	}
	before := b.state()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.client.BaseURL+Path,
				strings.NewReader(`{"sku":"SKU-1","quantity":1}`))
			if err != nil {
				t.Fatal(err)
			}
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			req.Header.Set(HeaderIdempotencyKey, `"k-token"`)
			resp, err := b.client.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("status = %d, WWW-Authenticate %q; want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			if got := b.state(); !reflect.DeepEqual(got, before) {
				t.Errorf("state = %+v; want unchanged %+v", got, before)
			}
			e := lastEvent(t, b.events())
			if e.Kind != evidence.KindOrderRejected || e.Status != 401 || !strings.Contains(e.Reason, tc.reason) {
				t.Errorf("event = %s %d %q; want order_rejected 401 with %q", e.Kind, e.Status, e.Reason, tc.reason)
			}
		})
	}
	if tok := strings.TrimPrefix(tests[1].header, "Bearer "); bytes.Contains(b.log.Bytes(), []byte(tok[strings.LastIndexByte(tok, '.')+1:])) {
		t.Error("a token signature appears in the event log")
	}
	if es := b.events(); len(es) != len(tests) {
		t.Errorf("%d events for %d requests; want one each", len(es), len(tests))
	}
}

// signClaims signs a valid token for alice changed by mod.
func signClaims(t *testing.T, mod func(*jwt.RegisteredClaims)) string {
	t.Helper()
	c := Claims("alice", time.Now().Add(time.Hour))
	mod(&c)
	s, err := SignClaims(jwt.SigningMethodHS256, testSecret, c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tamper changes the subject of a signed token and keeps its signature.
func tamper(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	claims := jwt.RegisteredClaims{Subject: "mallory", ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}
	raw, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString(raw)
	return strings.Join(parts, ".")
}

func TestBadRequestsAreRefusedWithoutWrites(t *testing.T) {
	b := setup(t)
	b.exec(`INSERT INTO stock (sku, quantity, price_cents) VALUES ('SKU-LOW', 1, 100)`)
	tests := []struct {
		name   string
		method string
		path   string
		keys   []string // Idempotency-Key header values
		body   string
		status int
		reason string
	}{
		{"missing key", "POST", Path, nil, `{"sku":"SKU-1","quantity":1}`, 400, "missing Idempotency-Key"},
		{"empty key", "POST", Path, []string{`""`}, `{"sku":"SKU-1","quantity":1}`, 400, "Idempotency-Key"},
		{"two keys", "POST", Path, []string{`"a"`, `"b"`}, `{"sku":"SKU-1","quantity":1}`, 400, "invalid Idempotency-Key"},
		{"bad sf-string", "POST", Path, []string{`"a\x"`}, `{"sku":"SKU-1","quantity":1}`, 400, "invalid Idempotency-Key"},
		{"key too long", "POST", Path, []string{strings.Repeat("k", MaxKeyBytes+1)}, `{"sku":"SKU-1","quantity":1}`, 400, "invalid Idempotency-Key"},
		{"bad JSON", "POST", Path, []string{`"k"`}, `{"sku":"SKU-1",`, 400, "bad JSON"},
		{"unknown field", "POST", Path, []string{`"k"`}, `{"sku":"SKU-1","quantity":1,"price":0}`, 400, "bad JSON"},
		{"trailing data", "POST", Path, []string{`"k"`}, `{"sku":"SKU-1","quantity":1}{}`, 400, "trailing data"},
		{"fractional quantity", "POST", Path, []string{`"k"`}, `{"sku":"SKU-1","quantity":1.5}`, 400, "bad JSON"},
		{"quantity 0", "POST", Path, []string{`"k"`}, `{"sku":"SKU-1","quantity":0}`, 400, "quantity must be"},
		{"quantity 1001", "POST", Path, []string{`"k"`}, `{"sku":"SKU-1","quantity":1001}`, 400, "quantity must be"},
		{"no sku", "POST", Path, []string{`"k"`}, `{"quantity":1}`, 400, "sku is required"},
		{"lines and sku", "POST", Path, []string{`"k"`}, `{"sku":"SKU-1","quantity":1,"lines":[{"sku":"SKU-1","quantity":1}]}`, 400, "not both"},
		{"no lines", "POST", Path, []string{`"k"`}, `{"lines":[]}`, 400, "lines must hold"},
		{"too many lines", "POST", Path, []string{`"k"`}, `{"lines":[` + strings.Repeat(`{"sku":"X","quantity":1},`, MaxLines) + `{"sku":"Y","quantity":1}]}`, 400, "lines must hold"},
		{"sku twice", "POST", Path, []string{`"k"`}, `{"lines":[{"sku":"SKU-1","quantity":1},{"sku":"SKU-1","quantity":2}]}`, 400, "on two lines"},
		{"line quantity 0", "POST", Path, []string{`"k"`}, `{"lines":[{"sku":"SKU-1","quantity":1},{"sku":"SKU-LOW","quantity":0}]}`, 400, "quantity must be"},
		{"second line short", "POST", Path, []string{`"k-low2"`}, `{"lines":[{"sku":"SKU-1","quantity":1},{"sku":"SKU-LOW","quantity":2}]}`, 409, "insufficient stock of SKU-LOW"},
		{"sku too long", "POST", Path, []string{`"k"`}, `{"sku":"` + strings.Repeat("S", MaxSKUBytes+1) + `","quantity":1}`, 400, "sku longer"},
		{"body too large", "POST", Path, []string{`"k"`}, `{"sku":"` + strings.Repeat(" ", MaxBodyBytes) + `"}`, 413, "exceeds"},
		{"unknown sku", "POST", Path, []string{`"k"`}, `{"sku":"SKU-NONE","quantity":1}`, 404, "unknown sku"},
		{"insufficient stock", "POST", Path, []string{`"k-low"`}, `{"sku":"SKU-LOW","quantity":2}`, 409, "insufficient stock"},
		{"GET", "GET", Path, []string{`"k"`}, ``, 405, "not allowed"},
		{"other path", "POST", "/orders/1", []string{`"k"`}, `{"sku":"SKU-1","quantity":1}`, 404, "unknown path"},
	}
	before := b.state()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, b.client.BaseURL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+b.token)
			for _, k := range tc.keys {
				req.Header.Add(HeaderIdempotencyKey, k)
			}
			resp, err := b.client.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body ErrorResponse
			derr := json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || derr != nil || body.Error == "" {
				t.Errorf("answer = %d %+v (decode: %v); want %d with an error", resp.StatusCode, body, derr, tc.status)
			}
			if got := b.state(); !reflect.DeepEqual(got, before) {
				t.Errorf("state = %+v; want unchanged %+v", got, before)
			}
			e := lastEvent(t, b.events())
			if e.Kind != evidence.KindOrderRejected || e.Status != tc.status || !strings.Contains(e.Reason, tc.reason) {
				t.Errorf("event = %s %d %q; want order_rejected %d with %q", e.Kind, e.Status, e.Reason, tc.status, tc.reason)
			}
		})
	}
	if es := b.events(); len(es) != len(tests) {
		t.Errorf("%d events for %d requests; want one each", len(es), len(tests))
	}
	// A refusal stores nothing: the key used for insufficient stock still
	// places an order once the request fits.
	if res := b.place("k-low", PlaceRequest{SKU: "SKU-LOW", Quantity: 1}); res.Status != http.StatusCreated {
		t.Errorf("retry after 409 = %d (%s); want 201", res.Status, res.Body)
	}
}

func TestPlantedOutboxOutsideTx(t *testing.T) {
	planted := func(c *Config) { c.Plant = plant.OutboxOutsideTx }
	fourWrites := allWrites[:4]

	t.Run("crash between commit and intent", func(t *testing.T) {
		b := setup(t, planted)
		b.faults.Arm(spec.AfterOrderCommitBeforeOutbox, fault.Crash, 1)
		res := b.place("k-1", PlaceRequest{SKU: testSKU, Quantity: 2})
		if res.Status != http.StatusInternalServerError {
			t.Errorf("status = %d (%s); want 500", res.Status, res.Body)
		}
		st := b.state()
		if st.Rows["orders"] != 1 || st.Rows["outbox"] != 0 || st.Stock[testSKU] != 8 {
			t.Errorf("state = %+v; want an order without its outbox intent", st)
		}
		if n := b.count(`SELECT COUNT(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM outbox x WHERE x.event_id = CONCAT('e-', o.id))`); n != 1 {
			t.Errorf("orders without intent = %d; want 1", n)
		}
		if h := b.faults.Hits(spec.AfterOrderCommitBeforeOutbox); h != 1 {
			t.Errorf("fault hits = %d; want 1", h)
		}
		es := b.events()
		if len(es) != 1 || es[0].Kind != evidence.KindOrderCommitted || !reflect.DeepEqual(es[0].Writes, fourWrites) {
			t.Fatalf("events = %+v; want one order_committed with writes %v", es, fourWrites)
		}
	})

	t.Run("intent in its own transaction", func(t *testing.T) {
		b := setup(t, planted)
		res := b.place("k-1", PlaceRequest{SKU: testSKU, Quantity: 2})
		if res.Status != http.StatusCreated {
			t.Fatalf("status = %d (%s); want 201", res.Status, res.Body)
		}
		if n := b.count(`SELECT COUNT(*) FROM outbox WHERE event_id = 'e-1' AND aggregate_id = 1`); n != 1 {
			t.Errorf("outbox rows for e-1 = %d; want 1", n)
		}
		es := b.events()
		if want := []evidence.Kind{evidence.KindOrderCommitted, evidence.KindOutboxWritten}; !reflect.DeepEqual(kinds(es), want) {
			t.Fatalf("events = %v; want %v", kinds(es), want)
		}
		if !reflect.DeepEqual(es[0].Writes, fourWrites) || es[1].EventID != "e-1" || *es[1].OrderID != 1 {
			t.Errorf("events = %+v; want writes %v then outbox_written e-1", es, fourWrites)
		}
	})

	t.Run("clean service never reaches the point", func(t *testing.T) {
		b := setup(t)
		b.faults.Arm(spec.AfterOrderCommitBeforeOutbox, fault.Crash, -1)
		res := b.place("k-1", PlaceRequest{SKU: testSKU, Quantity: 2})
		if res.Status != http.StatusCreated {
			t.Fatalf("status = %d (%s); want 201", res.Status, res.Body)
		}
		if h := b.faults.Hits(spec.AfterOrderCommitBeforeOutbox); h != 0 {
			t.Errorf("fault hits = %d; want 0", h)
		}
		if n := b.count(`SELECT COUNT(*) FROM outbox WHERE event_id = 'e-1'`); n != 1 {
			t.Errorf("outbox rows = %d; want 1", n)
		}
	})
}
