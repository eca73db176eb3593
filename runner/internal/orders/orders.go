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
//	401 missing, malformed, badly signed, expired or not yet valid token,
//	    alg other than HS256, no exp, another issuer or audience
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
	"net/http"
	"regexp"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Path is the one route the service serves.
const Path = "/orders"

// Request limits.
const (
	MaxBodyBytes = 16 << 10
	MaxQuantity  = 1000
	MaxSKUBytes  = 64
	MaxLines     = 16
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
	// Faults is consulted at spec.AfterOrderCommitBeforeOutbox, which only
	// the planted code path reaches. nil injects nothing.
	Faults *fault.Injector
	// Now is the clock tokens are checked against. Default time.Now.
	Now func() time.Time
	// Issuer and Audience are what a token's iss and aud must be.
	// Default spec.TokenIssuer and spec.TokenAudience.
	Issuer, Audience string
}

var actorRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

func (c *Config) setDefaults() {
	if c.Actor == "" {
		c.Actor = DefaultActor
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Issuer == "" {
		c.Issuer = spec.TokenIssuer
	}
	if c.Audience == "" {
		c.Audience = spec.TokenAudience
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

// PlaceRequest is the body of POST /orders: one line (sku and quantity)
// or several (lines), not both.
type PlaceRequest struct {
	SKU      string `json:"sku,omitempty"`
	Quantity int    `json:"quantity,omitempty"`
	Lines    []Line `json:"lines,omitempty"`
}

// Line is one line of a PlaceRequest with several.
type Line struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

// OrderLines returns the request's lines: its one line, or its lines.
func (r PlaceRequest) OrderLines() []Line {
	if len(r.Lines) > 0 {
		return r.Lines
	}
	return []Line{{SKU: r.SKU, Quantity: r.Quantity}}
}

// PlaceResponse is the body of a 201 answer (and of its replays). SKU and
// StockLeft are the first line's, Quantity is the order's total; Lines
// are set for an order of several lines.
type PlaceResponse struct {
	OrderID     int64  `json:"order_id"`
	EventID     string `json:"event_id"`
	SKU         string `json:"sku"`
	Quantity    int    `json:"quantity"`
	AmountCents int64  `json:"amount_cents"`
	StockLeft   int64  `json:"stock_left"`
	Lines       []Line `json:"lines,omitempty"`
}

// ErrorResponse is the body of every non-2xx answer.
type ErrorResponse struct {
	Error string `json:"error"`
}

// OutboxPayload is the JSON payload of the outbox intent (SKU and
// Quantity as in PlaceResponse; Lines for an order of several lines).
type OutboxPayload struct {
	OrderID     int64  `json:"orderId"`
	SKU         string `json:"sku"`
	Quantity    int    `json:"quantity"`
	AmountCents int64  `json:"amountCents"`
	Lines       []Line `json:"lines,omitempty"`
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
	o := s.handleAs(r, principal)
	for i := range o.events {
		if o.events[i].Principal == "" {
			o.events[i].Principal = principal
		}
	}
	return o
}

// handleAs handles a request whose token named principal.
func (s *Service) handleAs(r *http.Request, principal string) outcome {
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
	// A scenario may hold requests here (spec.IdemChecked).
	if err := s.cfg.Faults.Hit(spec.IdemChecked); err != nil {
		return rejected(http.StatusInternalServerError, key, "internal error", err.Error())
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
	if err := validate(req); err != nil {
		return req, "", http.StatusBadRequest, err
	}
	return req, Fingerprint(req), 0, nil
}

// validate checks a decoded request: one line or several, each with a
// SKU and a quantity in range, no SKU twice.
func validate(req PlaceRequest) error {
	if req.Lines != nil {
		switch {
		case req.SKU != "" || req.Quantity != 0:
			return errors.New("give sku and quantity, or lines, not both")
		case len(req.Lines) == 0 || len(req.Lines) > MaxLines:
			return fmt.Errorf("lines must hold 1..%d lines", MaxLines)
		}
	}
	seen := map[string]bool{}
	for _, l := range req.OrderLines() {
		switch {
		case l.SKU == "":
			return errors.New("sku is required")
		case len(l.SKU) > MaxSKUBytes:
			return fmt.Errorf("sku longer than %d bytes", MaxSKUBytes)
		case !utf8.ValidString(l.SKU):
			return errors.New("sku is not valid UTF-8")
		case l.Quantity < 1 || l.Quantity > MaxQuantity:
			return fmt.Errorf("quantity must be 1..%d", MaxQuantity)
		case seen[l.SKU]:
			return fmt.Errorf("sku %q is on two lines", l.SKU)
		}
		seen[l.SKU] = true
	}
	return nil
}

// Fingerprint is the request hash stored in idempotency_records: the hex
// sha256 of the canonical JSON of req.
func Fingerprint(req PlaceRequest) string {
	canon, _ := json.Marshal(req) // strings and ints cannot fail
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
	query, args := `SELECT request_hash, status_code, response_body, order_id FROM idempotency_records WHERE principal = ? AND idem_key = ?`,
		[]any{principal, key}
	if s.cfg.Plant == plant.IdemKeyAcrossUsers {
		// The planted bug: the record is looked up by its key alone.
		query, args = `SELECT request_hash, status_code, response_body, order_id FROM idempotency_records WHERE idem_key = ? ORDER BY id LIMIT 1`,
			[]any{key}
	}
	err := s.cfg.DB.QueryRowContext(ctx, query, args...).Scan(&hash, &status, &body, &orderID)
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
