// Package orders is the order service of the system under test: POST
// /orders places an order in one local transaction that holds five writes
// (the conditional stock decrement, the order, its line, the idempotency
// record and the outbox intent), behind an HS256 bearer token and an
// Idempotency-Key header.
//
// Answers:
//
//	201 placed (or the stored answer of an idempotent replay)
//	400 missing or invalid Idempotency-Key, bad JSON, invalid fields
//	401 missing, malformed, badly signed or expired token, alg other than HS256
//	404 unknown path, or unknown SKU (nothing to decrement: no writes)
//	405 a method other than POST
//	409 insufficient stock (no writes), or the key is in flight in this service
//	413 body over MaxBodyBytes
//	422 the key was used before with another request body (no writes)
//	500 a write failed (for example the outbox event_id already exists, the
//	    commit-boundary scenario): every write of the transaction is rolled
//	    back; or a database error before any write
//
// Refusals leave no idempotency record, so a client may retry them with the
// same key. Every request yields one event in the log for what the client
// got, with two exceptions: a request that lost the race for its key to
// another process logs its own rollback before the replayed answer, and the
// planted bug OutboxOutsideTx adds outbox_written for the extra transaction.
package orders

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
)

// Path is the one route the service serves.
const Path = "/orders"

// Request limits.
const (
	MaxBodyBytes = 16 << 10
	MaxQuantity  = 1000
	MaxSKUBytes  = 64
)

// DefaultActor is the actor name written in events when Config.Actor is
// empty.
const DefaultActor = "orders"

// Config configures a Service.
type Config struct {
	// DB is the scratch database holding the migrated tables. Required.
	DB *sql.DB
	// Secret is the HS256 key tokens are verified with; at least
	// MinSecretBytes long. Required.
	Secret []byte
	// Log receives the events of every request (see the package
	// documentation); nil records nothing.
	Log *evidence.Log
	// Actor names the service in events. Default DefaultActor.
	Actor string
	// Plant is the planted bug; only plant.OutboxOutsideTx changes this
	// service. Default plant.None.
	Plant plant.Bug
	// Faults is consulted at fault.AfterOrderCommitBeforeOutbox, which only
	// the planted code path reaches. nil injects nothing.
	Faults *fault.Injector
	// Now is the clock tokens are checked against. Default time.Now.
	Now func() time.Time
}

var actorRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

func (c *Config) setDefaults() {
	if c.Actor == "" {
		c.Actor = DefaultActor
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	if c.DB == nil {
		return errors.New("orders config: DB is required")
	}
	if len(c.Secret) < MinSecretBytes {
		return fmt.Errorf("orders config: HS256 secret has %d bytes, need at least %d", len(c.Secret), MinSecretBytes)
	}
	if c.Actor != "" && !actorRE.MatchString(c.Actor) {
		return fmt.Errorf("orders config: actor %q must match %s", c.Actor, actorRE)
	}
	if _, err := plant.Parse(string(c.Plant)); err != nil {
		return fmt.Errorf("orders config: %w", err)
	}
	return nil
}

// Service places orders. It implements http.Handler and is safe for
// concurrent use.
type Service struct {
	cfg Config

	mu       sync.Mutex
	inflight map[string]struct{} // principal + "\x00" + key
	emitErr  error
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	secret := make([]byte, len(cfg.Secret))
	copy(secret, cfg.Secret)
	cfg.Secret = secret
	return &Service{cfg: cfg, inflight: map[string]struct{}{}}, nil
}

// EmitErr returns the first error the event log returned, if any: a run
// whose log lost an event must not pass.
func (s *Service) EmitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emitErr
}

// PlaceRequest is the body of POST /orders.
type PlaceRequest struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

// PlaceResponse is the body of a 201 answer (and of its replays).
type PlaceResponse struct {
	OrderID     int64  `json:"order_id"`
	EventID     string `json:"event_id"`
	SKU         string `json:"sku"`
	Quantity    int    `json:"quantity"`
	AmountCents int64  `json:"amount_cents"`
	StockLeft   int64  `json:"stock_left"`
}

// ErrorResponse is the body of every non-2xx answer.
type ErrorResponse struct {
	Error string `json:"error"`
}

// OutboxPayload is the JSON payload of the outbox intent.
type OutboxPayload struct {
	OrderID     int64  `json:"orderId"`
	SKU         string `json:"sku"`
	Quantity    int    `json:"quantity"`
	AmountCents int64  `json:"amountCents"`
}

// outcome is what one request produced: the answer and its events.
type outcome struct {
	status int
	body   []byte
	events []evidence.Event
	allow  string // Allow header for 405
}

func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o := s.handle(r)
	for _, e := range o.events {
		s.emit(e)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if o.allow != "" {
		h.Set("Allow", o.allow)
	}
	if o.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="orders"`)
	}
	w.WriteHeader(o.status)
	_, _ = w.Write(o.body)
}

func (s *Service) emit(e evidence.Event) {
	e.Actor = s.cfg.Actor
	if err := s.cfg.Log.Emit(e); err != nil {
		s.mu.Lock()
		if s.emitErr == nil {
			s.emitErr = err
		}
		s.mu.Unlock()
	}
}

func (s *Service) handle(r *http.Request) outcome {
	if r.URL.Path != Path {
		return rejected(http.StatusNotFound, "", "not found", "unknown path")
	}
	if r.Method != http.MethodPost {
		o := rejected(http.StatusMethodNotAllowed, "", "method not allowed", "method "+r.Method+" not allowed")
		o.allow = http.MethodPost
		return o
	}
	principal, reason := s.verifyToken(r.Header.Get("Authorization"))
	if reason != "" {
		return rejected(http.StatusUnauthorized, "", errUnauthorized.Error(), reason)
	}
	key, err := parseIdempotencyKey(r.Header.Values(HeaderIdempotencyKey))
	if err != nil {
		return rejected(http.StatusBadRequest, "", err.Error(), err.Error())
	}
	req, fp, status, err := decodeRequest(r.Body)
	if err != nil {
		return rejected(status, key, err.Error(), err.Error())
	}
	release, ok := s.acquire(principal, key)
	if !ok {
		return rejected(http.StatusConflict, key, "a request with this Idempotency-Key is in flight", "idempotency key in flight")
	}
	defer release()

	ctx := r.Context()
	if o, found, err := s.fromRecord(ctx, principal, key, fp); err != nil {
		return rejected(http.StatusInternalServerError, key, "internal error", err.Error())
	} else if found {
		return o
	}
	return s.place(ctx, principal, key, fp, req)
}

// acquire marks (principal, key) in flight in this service.
func (s *Service) acquire(principal, key string) (release func(), ok bool) {
	k := principal + "\x00" + key
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.inflight[k]; busy {
		return nil, false
	}
	s.inflight[k] = struct{}{}
	return func() {
		s.mu.Lock()
		delete(s.inflight, k)
		s.mu.Unlock()
	}, true
}

// decodeRequest reads at most MaxBodyBytes, decodes strictly (unknown
// fields and trailing data are errors), validates, and returns the
// fingerprint: the sha256 of the request re-marshalled in canonical form,
// so that whitespace and key order do not make two bodies differ.
func decodeRequest(body io.Reader) (PlaceRequest, string, int, error) {
	var req PlaceRequest
	raw, err := io.ReadAll(io.LimitReader(body, MaxBodyBytes+1))
	if err != nil {
		return req, "", http.StatusBadRequest, fmt.Errorf("read body: %w", err)
	}
	if len(raw) > MaxBodyBytes {
		return req, "", http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds %d bytes", MaxBodyBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, "", http.StatusBadRequest, fmt.Errorf("bad JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, "", http.StatusBadRequest, errors.New("bad JSON: trailing data after the object")
	}
	switch {
	case req.SKU == "":
		return req, "", http.StatusBadRequest, errors.New("sku is required")
	case len(req.SKU) > MaxSKUBytes:
		return req, "", http.StatusBadRequest, fmt.Errorf("sku longer than %d bytes", MaxSKUBytes)
	case !utf8.ValidString(req.SKU):
		return req, "", http.StatusBadRequest, errors.New("sku is not valid UTF-8")
	case req.Quantity < 1 || req.Quantity > MaxQuantity:
		return req, "", http.StatusBadRequest, fmt.Errorf("quantity must be 1..%d", MaxQuantity)
	}
	return req, Fingerprint(req), 0, nil
}

// Fingerprint is the request hash stored in idempotency_records: the hex
// sha256 of the canonical JSON of req.
func Fingerprint(req PlaceRequest) string {
	canon, _ := json.Marshal(req) // a struct of a string and an int cannot fail
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// fromRecord answers from the stored idempotency record of (principal,
// key), if there is one: the stored status and body for the same request,
// 422 for another.
func (s *Service) fromRecord(ctx context.Context, principal, key, fp string) (outcome, bool, error) {
	var (
		hash    string
		status  int
		body    string
		orderID int64
	)
	err := s.cfg.DB.QueryRowContext(ctx,
		`SELECT request_hash, status_code, response_body, order_id FROM idempotency_records WHERE principal = ? AND idem_key = ?`,
		principal, key).Scan(&hash, &status, &body, &orderID)
	if errors.Is(err, sql.ErrNoRows) {
		return outcome{}, false, nil
	}
	if err != nil {
		return outcome{}, false, fmt.Errorf("read idempotency record: %w", err)
	}
	if hash != fp {
		return rejected(http.StatusUnprocessableEntity, key,
			"Idempotency-Key was already used with another request body", "idempotency key reused with another request body"), true, nil
	}
	return outcome{
		status: status,
		body:   []byte(body),
		events: []evidence.Event{{
			Kind:    evidence.KindOrderReplayed,
			OrderID: evidence.Ptr(orderID),
			Key:     key,
			Status:  status,
		}},
	}, true, nil
}

// place runs the order transaction.
func (s *Service) place(ctx context.Context, principal, key, fp string, req PlaceRequest) outcome {
	tx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return rejected(http.StatusInternalServerError, key, "internal error", "begin order transaction: "+err.Error())
	}
	var (
		writes  []string
		orderID *int64
		eventID string
	)
	// fail rolls back explicitly (MariaDB keeps the earlier writes of a
	// transaction after a failed statement) and records what happened.
	fail := func(status int, msg string, cause error) outcome {
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			cause = fmt.Errorf("%w (rollback: %v)", cause, rbErr)
		}
		if len(writes) == 0 {
			return rejected(status, key, msg, cause.Error())
		}
		return outcome{
			status: status,
			body:   errorBody(msg),
			events: []evidence.Event{{
				Kind:    evidence.KindOrderRolledBack,
				OrderID: orderID,
				EventID: eventID,
				Key:     key,
				Status:  status,
				Err:     clip(cause.Error(), 4096),
			}},
		}
	}
	internal := func(op string, err error) outcome {
		return fail(http.StatusInternalServerError, "internal error", fmt.Errorf("%s: %w", op, err))
	}

	// 1. The conditional stock decrement.
	q := int64(req.Quantity)
	res, err := tx.ExecContext(ctx,
		`UPDATE stock SET quantity = quantity - ? WHERE sku = ? AND quantity >= ?`, q, req.SKU, q)
	if err != nil {
		return internal("decrement stock", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return internal("decrement stock", err)
	}
	if n == 0 {
		var known int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM stock WHERE sku = ?`, req.SKU).Scan(&known); err != nil {
			return internal("look up sku", err)
		}
		_ = tx.Rollback() // nothing was written
		// Another process may have placed this very request and taken the
		// stock while we waited on its row lock: its record is the answer.
		if o, found, err := s.fromRecord(ctx, principal, key, fp); err == nil && found {
			return o
		}
		if known == 0 {
			return rejected(http.StatusNotFound, key, "unknown sku", "unknown sku")
		}
		return rejected(http.StatusConflict, key, "insufficient stock", "insufficient stock")
	}
	writes = append(writes, evidence.WriteStock)
	var left, price int64
	if err := tx.QueryRowContext(ctx, `SELECT quantity, price_cents FROM stock WHERE sku = ?`, req.SKU).Scan(&left, &price); err != nil {
		return internal("read stock", err)
	}
	if price < 0 || price > math.MaxInt64/q {
		return internal("price", fmt.Errorf("amount of %d x %d cents out of range", q, price))
	}
	amount := price * q

	// 2. The order.
	res, err = tx.ExecContext(ctx,
		`INSERT INTO orders (principal, sku, quantity, amount_cents) VALUES (?, ?, ?, ?)`,
		principal, req.SKU, q, amount)
	if err != nil {
		return internal("insert order", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return internal("insert order", err)
	}
	writes = append(writes, evidence.WriteOrders)
	orderID = evidence.Ptr(id)
	eventID = evidence.EventIDFor(id)

	// 3. Its line.
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO order_lines (order_id, sku, quantity, price_cents) VALUES (?, ?, ?, ?)`,
		id, req.SKU, q, price); err != nil {
		return internal("insert order line", err)
	}
	writes = append(writes, evidence.WriteOrderLines)

	// 4. The idempotency record with the answer a replay gets.
	body, err := json.Marshal(PlaceResponse{
		OrderID: id, EventID: eventID, SKU: req.SKU, Quantity: req.Quantity,
		AmountCents: amount, StockLeft: left,
	})
	if err != nil {
		return internal("encode response", err)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO idempotency_records (principal, idem_key, request_hash, status_code, response_body, order_id) VALUES (?, ?, ?, ?, ?, ?)`,
		principal, key, fp, http.StatusCreated, string(body), id); err != nil {
		if !isDuplicate(err) {
			return internal("insert idempotency record", err)
		}
		// Another process committed the same (principal, key) while we
		// waited on its unique key: roll back and answer from its record.
		dup := fail(http.StatusConflict, "a request with this Idempotency-Key is in flight",
			fmt.Errorf("insert idempotency record: %w", err))
		if o, found, ferr := s.fromRecord(ctx, principal, key, fp); ferr == nil && found {
			// The client gets the stored answer, but this request's own
			// writes were rolled back: both are recorded.
			o.events = append(dup.events, o.events...)
			return o
		}
		return dup
	}
	writes = append(writes, evidence.WriteIdempotency)

	payload, err := json.Marshal(OutboxPayload{OrderID: id, SKU: req.SKU, Quantity: req.Quantity, AmountCents: amount})
	if err != nil {
		return internal("encode outbox payload", err)
	}
	committed := func() evidence.Event {
		return evidence.Event{
			Kind:     evidence.KindOrderCommitted,
			OrderID:  evidence.Ptr(id),
			EventID:  eventID,
			Key:      key,
			SKU:      req.SKU,
			Quantity: evidence.Ptr(q),
			Stock:    evidence.Ptr(left),
			Status:   http.StatusCreated,
			Writes:   append([]string(nil), writes...),
		}
	}

	if s.cfg.Plant == plant.OutboxOutsideTx {
		return s.placeOutboxOutsideTx(ctx, tx, committed, fail, key, id, eventID, payload, body)
	}

	// 5. The outbox intent, in the same transaction.
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state) VALUES (?, ?, 1, ?, ?)`,
		eventID, id, string(payload), evidence.StatePending); err != nil {
		return fail(http.StatusInternalServerError, "order could not be placed: outbox intent conflict",
			fmt.Errorf("insert outbox intent: %w", err))
	}
	writes = append(writes, evidence.WriteOutbox)
	if err := tx.Commit(); err != nil {
		// The outcome of a failed COMMIT is unknown to us; say so.
		return fail(http.StatusInternalServerError, "internal error", fmt.Errorf("commit (outcome unknown): %w", err))
	}
	return outcome{status: http.StatusCreated, body: body, events: []evidence.Event{committed()}}
}

// placeOutboxOutsideTx is the planted bug: the order commits with four
// writes, and the intent follows in a transaction of its own, with a crash
// window in between.
func (s *Service) placeOutboxOutsideTx(ctx context.Context, tx *sql.Tx, committed func() evidence.Event,
	fail func(int, string, error) outcome, key string, id int64, eventID string, payload, body []byte,
) outcome {
	if err := tx.Commit(); err != nil {
		return fail(http.StatusInternalServerError, "internal error", fmt.Errorf("commit (outcome unknown): %w", err))
	}
	events := []evidence.Event{committed()}
	if err := s.cfg.Faults.Hit(fault.AfterOrderCommitBeforeOutbox); err != nil {
		return outcome{status: http.StatusInternalServerError, body: errorBody("internal error"), events: events}
	}
	intentFailed := func(err error) outcome {
		events = append(events, evidence.Event{
			Kind:    evidence.KindOrderRolledBack,
			OrderID: evidence.Ptr(id),
			EventID: eventID,
			Key:     key,
			Status:  http.StatusInternalServerError,
			Err:     clip(err.Error(), 4096),
		})
		return outcome{status: http.StatusInternalServerError, body: errorBody("internal error"), events: events}
	}
	otx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return intentFailed(fmt.Errorf("begin outbox transaction: %w", err))
	}
	if _, err := otx.ExecContext(ctx,
		`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state) VALUES (?, ?, 1, ?, ?)`,
		eventID, id, string(payload), evidence.StatePending); err != nil {
		_ = otx.Rollback()
		return intentFailed(fmt.Errorf("insert outbox intent: %w", err))
	}
	if err := otx.Commit(); err != nil {
		return intentFailed(fmt.Errorf("commit outbox intent (outcome unknown): %w", err))
	}
	events = append(events, evidence.Event{Kind: evidence.KindOutboxWritten, OrderID: evidence.Ptr(id), EventID: eventID})
	return outcome{status: http.StatusCreated, body: body, events: events}
}

// rejected is an answer without any write.
func rejected(status int, key, msg, reason string) outcome {
	return outcome{
		status: status,
		body:   errorBody(msg),
		events: []evidence.Event{{
			Kind:   evidence.KindOrderRejected,
			Key:    key,
			Status: status,
			Reason: clip(reason, 1024),
		}},
	}
}

func errorBody(msg string) []byte {
	b, _ := json.Marshal(ErrorResponse{Error: msg})
	return b
}

func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1062
}

// clip shortens s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
