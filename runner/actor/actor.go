// Package actor runs one actor of the system under test (the order service,
// the relay or the consumer) as the whole of the current process, for the
// hidden CLI command `orderflow-audit actor`, so that a scenario can start
// it as a child process and SIGKILL it at a fault point.
//
// It lives under runner/ because the actors live under runner/internal/,
// which cmd/ cannot import. Spec is the contract between the parent (which
// builds the command line with Spec.Args and the environment with Env) and
// the child (which parses it with Spec.RegisterFlags and calls Run); Start
// does both sides' plumbing for a parent.
//
// Secrets never travel on the command line, which other users can read in
// ps: the DSN (with its password) comes only from ORDERFLOW_MYSQL_DSN and the
// order service's HS256 secret only from ORDERFLOW_JWT_SECRET (hex).
package actor

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
)

// EnvJWTSecret holds the order service's HS256 secret, hex encoded. The DSN
// comes from infra.EnvMySQLDSN.
const EnvJWTSecret = "ORDERFLOW_JWT_SECRET"

// ListeningPrefix starts the first stdout line of an orders actor:
// "listening on http://127.0.0.1:PORT".
const ListeningPrefix = "listening on "

// Run runs the actor of s until it is done (--once), ctx ends (a clean
// stop: nil), or it fails. stdout receives the orders actor's listening
// line and the --once summaries, one JSON object per line.
func Run(ctx context.Context, s Spec, stdout io.Writer) (err error) {
	if err := s.Validate(); err != nil {
		return err
	}
	bug, _ := plant.Parse(s.Plant)
	faults := &fault.Injector{}
	for _, f := range s.Faults {
		p, a, _ := ParseFault(f)
		faults.Arm(p, a, 1)
	}
	stops, _ := parseStopAt(s.StopAt)
	defer armStopsOnSignal(faults, stops)()
	var secret []byte
	if s.Role == Orders {
		if secret, err = secretFromEnv(); err != nil {
			return err
		}
	}

	db, err := openScratch(ctx, s.DB)
	if err != nil {
		return err
	}
	defer db.Close()

	var log *evidence.Log
	if s.LogPath != "" {
		if log, err = evidence.CreateLog(s.LogPath, s.RunID, s.Scenario); err != nil {
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		defer func() {
			if cerr := log.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("close event log: %w", cerr)
			}
		}()
	}

	switch s.Role {
	case Orders:
		return runOrders(ctx, s, db, log, secret, bug, faults, stdout)
	case Relay:
		return runRelay(ctx, s, db, log, bug, faults, stdout)
	default:
		return runConsumer(ctx, s, db, log, bug, faults, stdout)
	}
}

func secretFromEnv() ([]byte, error) {
	v := os.Getenv(EnvJWTSecret)
	if v == "" {
		return nil, fmt.Errorf("%w: the orders actor needs its HS256 secret in %s (hex)", ErrUsage, EnvJWTSecret)
	}
	b, err := hex.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not hex", ErrUsage, EnvJWTSecret)
	}
	return b, nil
}

// openScratch connects to the server of ORDERFLOW_MYSQL_DSN (or the default)
// and opens database name, which must carry the orderflow-audit marker: an
// actor never writes into a database that a run did not create.
func openScratch(ctx context.Context, name string) (*sql.DB, error) {
	cfg, err := infra.ResolveDSN("")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUsage, infra.EnvMySQLDSN, err)
	}
	srv, err := infra.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	dsn := srv.DSNFor(name)
	redacted := infra.Redact(srv.ConfigFor(name))
	srv.Close()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", infra.ErrUnavailable, redacted, err)
	}
	var tool string
	err = db.QueryRowContext(ctx, `SELECT tool FROM ofa_marker WHERE id = 1`).Scan(&tool)
	switch {
	case ctx.Err() != nil:
		db.Close()
		return nil, ctx.Err()
	case err != nil:
		db.Close()
		return nil, fmt.Errorf("%w: database %s on %s: %w (%v)", ErrUsage, name, redacted, infra.ErrNotOurs, err)
	case tool != "orderflow-audit":
		db.Close()
		return nil, fmt.Errorf("%w: database %s on %s: %w", ErrUsage, name, redacted, infra.ErrNotOurs)
	}
	return db, nil
}

func runOrders(ctx context.Context, s Spec, db *sql.DB, log *evidence.Log, secret []byte,
	bug plant.Bug, faults *fault.Injector, stdout io.Writer) error {
	svc, err := orders.New(orders.Config{
		DB: db, Secret: secret, Log: log, Actor: s.Actor, Plant: bug, Faults: faults,
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return fmt.Errorf("%w: orders: listen on %s: %v", infra.ErrUnavailable, s.Listen, err)
	}
	srv := &http.Server{Handler: svc, ReadHeaderTimeout: 10 * time.Second}
	if _, err := fmt.Fprintf(stdout, "%shttp://%s\n", ListeningPrefix, ln.Addr()); err != nil {
		ln.Close()
		return fmt.Errorf("orders: announce address: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("orders: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGracePeriod)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("orders: shutdown: %w", err)
	}
	if err := svc.EmitErr(); err != nil {
		return fmt.Errorf("orders: event log lost an event: %w", err)
	}
	return nil
}

// RelaySummary is the JSON line a --once relay prints.
type RelaySummary struct {
	Claimed        int    `json:"claimed"`
	Published      int    `json:"published"`
	PublishFailed  int    `json:"publish_failed"`
	PublishUnknown int    `json:"publish_unknown"`
	Marked         int    `json:"marked"`
	LeaseLost      int    `json:"lease_lost"`
	Crashed        string `json:"crashed,omitempty"` // event id of the intent a simulated crash interrupted
}

func runRelay(ctx context.Context, s Spec, db *sql.DB, log *evidence.Log,
	bug plant.Bug, faults *fault.Injector, stdout io.Writer) error {
	k, err := infra.StartKafka(ctx, infra.KafkaConfig{Brokers: s.Brokers})
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(k.ClientOpts(append(relay.ProducerOpts(s.PublishTimeout), viaOpts(s)...)...)...)
	if err != nil {
		return fmt.Errorf("relay: producer: %w", err)
	}
	defer cl.Close()
	r, err := relay.New(relay.Config{
		DB: db, Client: cl, Topic: s.Topic, ClaimID: s.ClaimID, Lease: s.Lease,
		PublishTimeout: s.PublishTimeout, Batch: s.Batch, Log: log, Actor: s.Actor,
		Faults: faults, Plant: bug,
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if !s.Once {
		return r.Run(ctx, s.Poll)
	}
	res, err := r.RunOnce(ctx)
	sum := RelaySummary{
		Claimed: len(res.Claimed), Published: res.Published, PublishFailed: res.PublishFailed, PublishUnknown: res.PublishUnknown,
		Marked: res.Marked, LeaseLost: res.LeaseLost,
	}
	if res.Crashed != nil {
		sum.Crashed = res.Crashed.EventID
	}
	if perr := printJSON(stdout, sum); err == nil {
		err = perr
	}
	return err
}

// ConsumerSummary is the JSON line a --once consumer prints.
type ConsumerSummary struct {
	Received         int `json:"received"`
	InboxInserted    int `json:"inbox_inserted"`
	InboxRejected    int `json:"inbox_rejected"`
	Effects          int `json:"effects"`
	OffsetsCommitted int `json:"offsets_committed"`
	// EffectsRolledBack and CommitsUnknown count effect transactions that
	// did not commit (replayed by the next poll).
	EffectsRolledBack int `json:"effects_rolled_back"`
	CommitsUnknown    int `json:"commits_unknown"`
	// Owned is the partitions the member owned when it stopped.
	Owned int `json:"owned"`
}

func runConsumer(ctx context.Context, s Spec, db *sql.DB, log *evidence.Log,
	bug plant.Bug, faults *fault.Injector, stdout io.Writer) error {
	k, err := infra.StartKafka(ctx, infra.KafkaConfig{Brokers: s.Brokers})
	if err != nil {
		return err
	}
	member := s.Member
	if member == "" {
		member = s.Actor
	}
	extra := viaOpts(s)
	if s.InstanceID != "" {
		extra = append(extra, kgo.InstanceID(s.InstanceID))
	}
	c, err := consumer.New(ctx, consumer.Config{
		DB: db, ClientOpts: k.ClientOpts(extra...), Topic: s.Topic, Group: s.Group, Name: s.Name,
		Member: member, Log: log, Faults: faults, Plant: bug, BatchEffects: s.BatchEffects,
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return err
		}
		return fmt.Errorf("%w: %v", infra.ErrUnavailable, err)
	}
	if !s.Once {
		err = c.Run(ctx)
		closeUnlessCrashed(c, err)
		return err
	}
	wantReceived := s.UntilReceived
	if wantReceived == 0 && s.UntilEffects == 0 {
		wantReceived = 1
	}
	pctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	st, err := c.PollUntil(pctx, func(st consumer.Stats) bool {
		return st.Received >= wantReceived && st.Effects >= s.UntilEffects
	})
	closeUnlessCrashed(c, err)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w within %v: want received>=%d effects>=%d, got %+v",
			ErrNotReached, s.Timeout, wantReceived, s.UntilEffects, st)
	}
	if perr := printJSON(stdout, ConsumerSummary(st)); err == nil {
		err = perr
	}
	return err
}

// viaOpts sends every connection to the broker to s.Via (none without
// it): the broker advertises its own address, which would bypass a proxy
// that is only the seed.
func viaOpts(s Spec) []kgo.Opt {
	if s.Via == "" {
		return nil
	}
	d := &net.Dialer{Timeout: 3 * time.Second}
	return []kgo.Opt{kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, s.Via)
	})}
}

// closeUnlessCrashed leaves the group cleanly, except after a simulated
// crash: a dead process does not leave its group, it times out.
func closeUnlessCrashed(c *consumer.Consumer, err error) {
	if !errors.Is(err, fault.ErrCrash) {
		c.Close()
	}
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}
