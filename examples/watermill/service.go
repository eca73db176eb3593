package main

import (
	"context"
	stdsql "database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/go-sql-driver/mysql"
)

// runService is the order service: POST /orders, GET /healthz.
func runService(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("service", `The order service. POST /orders (header Idempotency-Key, optional header
Correlation-ID, body {"sku": "...", "qty": N, "note": "..."}) inserts the
order and publishes OrderCreated through Watermill's SQL publisher (wrapped
by the forwarder's publisher, for the Kafka topic) in one transaction;
answers 201 with {"order_id", "event_id"}, or 200 with the earlier order for
a key already used. GET /healthz answers 200 once the database answers.

Example:
  watermill-example service --mysql-dsn 'root@tcp(127.0.0.1:3306)/shop' --listen 127.0.0.1:8080 --topic orders`, stderr)
	var dbf dbFlags
	dbf.register(fs)
	listen := fs.String("listen", envOr("LISTEN_ADDR", "127.0.0.1:8080"), "`address` to listen on [LISTEN_ADDR]")
	topic := fs.String("topic", envOr("KAFKA_TOPIC", "orders"), "Kafka `topic` the forwarder is to publish OrderCreated to [KAFKA_TOPIC]")
	lock := fs.String("publish-lock", envOr("PUBLISH_LOCK", ""), "serialize the writers: hold the MySQL named lock `name` (GET_LOCK) around each\n"+
		"order's transaction, from before its insert until after its commit [PUBLISH_LOCK]")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	return exitCode(stderr, "service", serve(ctx, dbf, *listen, *topic, *lock, newLogger(stderr, "service")))
}

func serve(ctx context.Context, dbf dbFlags, listen, topic, lock string, log *slog.Logger) error {
	if topic == "" {
		return fmt.Errorf("%w: --topic must not be empty", errUsage)
	}
	db, err := dbf.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(64)
	db.SetMaxIdleConns(64)
	s := &orderService{db: db, topic: topic, lock: lock, log: log, wlog: watermill.NewSlogLogger(log)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", s.createOrder)
	mux.HandleFunc("GET /healthz", s.healthz)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "topic", topic, "publish_lock", lock)
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// orderService holds what a request needs. Each request opens its own
// transaction and its own Watermill publisher over it, as watermill-sql's
// documentation does for a transactional publish; requests run
// concurrently, one connection each.
type orderService struct {
	db    *stdsql.DB
	topic string
	// lock, when set, is the named lock each order's transaction holds
	// (--publish-lock): one writer at a time.
	lock string
	log  *slog.Logger
	wlog watermill.LoggerAdapter
}

// orderRequest is the body of POST /orders.
type orderRequest struct {
	SKU  string `json:"sku"`
	Qty  int    `json:"qty"`
	Note string `json:"note"`
}

// orderCreated is the OrderCreated message's payload (the Kafka record's
// value once forwarded).
type orderCreated struct {
	OrderID int64  `json:"order_id"`
	SKU     string `json:"sku"`
	Qty     int    `json:"qty"`
	Note    string `json:"note"`
}

// orderAnswer is the body of a 200 or 201 answer.
type orderAnswer struct {
	OrderID int64  `json:"order_id"`
	EventID string `json:"event_id"`
	Replay  bool   `json:"replay,omitempty"`
}

func (s *orderService) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.db.PingContext(ctx); err != nil {
		http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *orderService) createOrder(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" || len(key) > 128 {
		http.Error(w, "an Idempotency-Key header of 1 to 128 characters is required", http.StatusBadRequest)
		return
	}
	var req orderRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.SKU == "" || len(req.SKU) > 64 || req.Qty < 1 || req.Qty > 1000 || len(req.Note) > 255 {
		http.Error(w, "want sku (1-64 characters), qty (1-1000), note (at most 255 characters)", http.StatusBadRequest)
		return
	}
	correlation := r.Header.Get("Correlation-ID")
	if correlation == "" {
		correlation = watermill.NewUUID()
	}
	ans, err := s.insert(r.Context(), key, correlation, req)
	if errors.Is(err, errDuplicateKey) {
		ans, err = s.existing(r.Context(), key)
	}
	if err != nil {
		s.log.Error("create order", "idempotency_key", key, "err", err)
		http.Error(w, "could not create the order", http.StatusInternalServerError)
		return
	}
	status := http.StatusCreated
	if ans.Replay {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ans)
}

// errDuplicateKey is an insert refused by the idempotency key's unique
// index: the key's order exists (or is being committed by a concurrent
// request, which the insert waited for).
var errDuplicateKey = errors.New("idempotency key already used")

// lockWait bounds the wait for the publish lock.
const lockWait = 30 // seconds

// insert writes the order and publishes its OrderCreated message in one
// transaction; with a publish lock, on a connection of its own that holds
// the lock from before the transaction begins until after it ended. The
// lock is the session's: a connection that dies releases it.
func (s *orderService) insert(ctx context.Context, key, correlation string, req orderRequest) (orderAnswer, error) {
	if s.lock == "" {
		return s.insertTx(ctx, s.db, key, correlation, req)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return orderAnswer{}, fmt.Errorf("connection: %w", err)
	}
	defer conn.Close()
	var got stdsql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", s.lock, lockWait).Scan(&got); err != nil {
		return orderAnswer{}, fmt.Errorf("GET_LOCK(%q): %w", s.lock, err)
	}
	if !got.Valid || got.Int64 != 1 {
		return orderAnswer{}, fmt.Errorf("GET_LOCK(%q): not granted within %d s", s.lock, lockWait)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(rctx, "DO RELEASE_LOCK(?)", s.lock); err != nil {
			// Never give the pool a connection that may hold the lock.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	return s.insertTx(ctx, conn, key, correlation, req)
}

// beginner is a *sql.DB or a *sql.Conn.
type beginner interface {
	BeginTx(ctx context.Context, opts *stdsql.TxOptions) (*stdsql.Tx, error)
}

func (s *orderService) insertTx(ctx context.Context, db beginner, key, correlation string, req orderRequest) (ans orderAnswer, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return ans, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	eventID := watermill.NewUUID()
	res, err := tx.ExecContext(ctx,
		"INSERT INTO orders (idempotency_key, event_id, sku, qty, note) VALUES (?, ?, ?, ?, ?)",
		key, eventID, req.SKU, req.Qty, req.Note)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1062 {
			return ans, errDuplicateKey
		}
		return ans, fmt.Errorf("insert order: %w", err)
	}
	orderID, err := res.LastInsertId()
	if err != nil {
		return ans, fmt.Errorf("order id: %w", err)
	}
	payload, err := json.Marshal(orderCreated{OrderID: orderID, SKU: req.SKU, Qty: req.Qty, Note: req.Note})
	if err != nil {
		return ans, err
	}
	msg := message.NewMessage(eventID, payload)
	msg.Metadata.Set(aggregateKey, strconv.FormatInt(orderID, 10))
	msg.Metadata.Set("event_type", "OrderCreated")
	middleware.SetCorrelationID(correlation, msg)
	msg.SetContext(ctx)
	pub, err := s.publisher(tx)
	if err != nil {
		return ans, err
	}
	if err := pub.Publish(s.topic, msg); err != nil {
		return ans, fmt.Errorf("publish OrderCreated: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return ans, fmt.Errorf("commit: %w", err)
	}
	return orderAnswer{OrderID: orderID, EventID: eventID}, nil
}

// publisher is Watermill's publisher over tx: the SQL publisher on the
// default MySQL schema, wrapped by the forwarder's publisher, which stores
// the message in an envelope naming the Kafka topic, in the SQL topic the
// forwarder reads.
func (s *orderService) publisher(tx *stdsql.Tx) (message.Publisher, error) {
	pub, err := wsql.NewPublisher(wsql.TxFromStdSQL(tx), wsql.PublisherConfig{
		SchemaAdapter: wsql.DefaultMySQLSchema{},
	}, s.wlog)
	if err != nil {
		return nil, fmt.Errorf("watermill-sql publisher: %w", err)
	}
	return forwarder.NewPublisher(pub, forwarder.PublisherConfig{ForwarderTopic: outboxTopic}), nil
}

// existing answers a request whose idempotency key has an order already.
func (s *orderService) existing(ctx context.Context, key string) (orderAnswer, error) {
	ans := orderAnswer{Replay: true}
	err := s.db.QueryRowContext(ctx, "SELECT id, event_id FROM orders WHERE idempotency_key = ?", key).Scan(&ans.OrderID, &ans.EventID)
	if err != nil {
		return ans, fmt.Errorf("read the order of idempotency key %q: %w", key, err)
	}
	return ans, nil
}
