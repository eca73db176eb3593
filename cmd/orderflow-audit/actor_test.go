package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/runner/actor"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds this command once per test process.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		if binDir, binErr = os.MkdirTemp("", "ofa-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, progName)
		out, err := exec.Command(goTool, "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestActorUnreachableDSN(t *testing.T) {
	t.Setenv(infra.EnvMySQLDSN, "root:hunter2@tcp(127.0.0.1:1)/")
	code, out, errs := runCLI(t, "actor", "relay", "--once", "--db", "ofa_x", "--brokers", "127.0.0.1:1", "--topic", "t")
	if code != exitUnavailable {
		t.Fatalf("exit %d; want 3 (stderr %q)", code, errs)
	}
	if strings.Contains(out+errs, "hunter2") {
		t.Errorf("output leaks the password: %q %q", out, errs)
	}
	for _, want := range []string{"root:xxxxx@tcp(127.0.0.1:1)", "mariadbd"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q lacks %q", errs, want)
		}
	}
}

func TestActorUsageErrors(t *testing.T) {
	t.Setenv(infra.EnvMySQLDSN, "root:hunter2@tcp(127.0.0.1:1)/") // never reached
	t.Setenv(infra.EnvKafkaBrokers, "")
	t.Setenv(actor.EnvJWTSecret, "")
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"actor"}, "missing role"},
		{[]string{"actor", "billing"}, `unknown actor role "billing"`},
		{[]string{"actor", "relay", "--topic", "t", "--brokers", "b:1"}, "--db is required"},
		{[]string{"actor", "relay", "--db", "mysql", "--topic", "t", "--brokers", "b:1"}, "scratch databases"},
		{[]string{"actor", "relay", "--db", "ofa_x", "--topic", "t"}, "no broker"},
		{[]string{"actor", "relay", "--db", "ofa_x", "--brokers", "b:1"}, "--topic is required"},
		{[]string{"actor", "relay", "--db", "ofa_x", "--topic", "t", "--brokers", "b:1", "--log", "x.jsonl"}, "--log needs --run-id"},
		{[]string{"actor", "relay", "--db", "ofa_x", "--topic", "t", "--brokers", "b:1", "--fault", "nowhere"}, `unknown fault point "nowhere"`},
		{[]string{"actor", "relay", "--db", "ofa_x", "--topic", "t", "--brokers", "b:1", "--fault", "after-publish-before-mark:explode"}, "kill or crash"},
		{[]string{"actor", "relay", "--db", "ofa_x", "--topic", "t", "--brokers", "b:1", "--plant", "gremlin"}, `unknown planted bug "gremlin"`},
		{[]string{"actor", "consumer", "--db", "ofa_x", "--topic", "t", "--brokers", "b:1", "--until-effects", "1"}, "need --once"},
		{[]string{"actor", "orders", "--db", "ofa_x"}, actor.EnvJWTSecret},
		{[]string{"actor", "orders", "--db", "ofa_x", "--topic", "t"}, "flag provided but not defined: -topic"},
		{[]string{"actor", "relay", "--db", "ofa_x", "extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			code, out, errs := runCLI(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d; want 2 (stderr %q)", code, errs)
			}
			if !strings.Contains(errs, tt.wantErr) {
				t.Errorf("stderr %q lacks %q", errs, tt.wantErr)
			}
			if out != "" {
				t.Errorf("stdout = %q; want nothing", out)
			}
		})
	}
}

// TestActorSpecArgsRoundTrip checks that what a parent builds with
// Spec.Args parses back, through this command's flags, into the same Spec.
func TestActorSpecArgsRoundTrip(t *testing.T) {
	common := actor.Spec{
		DB: "ofa_r1_s", LogPath: "/tmp/x.jsonl", RunID: "r1", Scenario: "s", Actor: "a-1",
		Faults: []string{"after-publish-before-mark:kill", "after-claim-before-publish:crash"}, Plant: "mark-without-token",
	}
	orders := common
	orders.Role, orders.Listen = actor.Orders, "127.0.0.1:8080"
	rel := common
	rel.Role, rel.Brokers, rel.Topic, rel.Once = actor.Relay, []string{"127.0.0.1:1", "127.0.0.1:2"}, "t", true
	rel.ClaimID, rel.Lease, rel.PublishTimeout, rel.Batch, rel.Poll = "relay-b", 2*time.Second, 3*time.Second, 4, 50*time.Millisecond
	con := common
	con.Role, con.Brokers, con.Topic, con.Once = actor.Consumer, []string{"127.0.0.1:1"}, "t", true
	con.Group, con.Name, con.Member, con.UntilEffects, con.UntilReceived, con.Timeout = "g", "notifier", "consumer-2", 2, 3, 7*time.Second
	minimal := actor.Spec{Role: actor.Relay, DB: "ofa_x", Topic: "t", Brokers: []string{"b:1"}}

	for _, want := range []actor.Spec{orders, rel, con, minimal} {
		t.Run(string(want.Role), func(t *testing.T) {
			args := want.Args()
			if args[0] != "actor" || args[1] != string(want.Role) {
				t.Fatalf("Args() = %q", args)
			}
			got := actor.Spec{Role: want.Role}
			fs := newFlagSet("actor", "", "", "")
			got.RegisterFlags(fs.FlagSet)
			if code, ok := fs.parse(args[2:], io.Discard, io.Discard); !ok {
				t.Fatalf("parse(%q) failed with %d", args, code)
			}
			// Flag defaults that Args leaves out.
			exp := want
			if exp.Role == actor.Orders && exp.Listen == "" {
				exp.Listen = actor.DefaultListen
			}
			if exp.Role == actor.Relay && exp.Poll == 0 {
				exp.Poll = actor.DefaultPoll
			}
			if exp.Role == actor.Consumer && exp.Timeout == 0 {
				exp.Timeout = actor.DefaultOnceTimeout
			}
			if !reflect.DeepEqual(got, exp) {
				t.Errorf("round trip of %q:\n got  %+v\n want %+v", args, got, exp)
			}
			for _, a := range args {
				if strings.Contains(a, "tcp(") || strings.Contains(a, "@") {
					t.Errorf("Args() carries a DSN: %q", args)
				}
			}
		})
	}
}

// seedIntent inserts a PENDING outbox intent for order id as the order
// service would write it.
func seedIntent(t *testing.T, sc *infra.Scratch, id int64) string {
	t.Helper()
	eventID := evidence.EventIDFor(id)
	payload := fmt.Sprintf(`{"orderId":%d,"sku":"SKU-1","quantity":1,"amountCents":1250}`, id)
	if _, err := sc.DB.ExecContext(t.Context(),
		`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state) VALUES (?, ?, 1, ?, 'PENDING')`,
		eventID, id, payload); err != nil {
		t.Fatalf("seed outbox: %v", err)
	}
	return eventID
}

// readLog reads an actor's log, validates every complete line against the
// event schema and checks that seq increases. A truncated final line (a
// process killed mid-write) is reported through truncated.
func readLog(t *testing.T, path string) (events []evidence.Event, truncated bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	defer f.Close()
	return evidencetest.Read(t, f)
}

func kinds(es []evidence.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Kind))
	}
	return out
}

func TestActorRelayOnceProcess(t *testing.T) {
	exe := binary(t)
	srv := infratest.Server(t)
	sc := infratest.Scratch(t)
	k := infratest.Kafka(t)
	topic := infratest.Topic(t, k)
	eventID := seedIntent(t, sc, 41)
	logPath := filepath.Join(t.TempDir(), "relay-a.jsonl")

	spec := actor.Spec{
		Role: actor.Relay, DB: sc.Name, Brokers: k.Brokers, Topic: topic, Once: true,
		LogPath: logPath, RunID: "r1", Scenario: "actorRelay", Actor: "relay-a", ClaimID: "relay-a-r1",
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	p, err := actor.Start(ctx, exe, spec, actor.Env(srv.DSNFor(""), nil))
	if err != nil {
		t.Fatal(err)
	}
	exit, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if exit.Code != exitOK {
		t.Fatalf("relay actor: %s; stderr %s", exit, exit.Stderr)
	}
	var sum actor.RelaySummary
	if err := json.Unmarshal([]byte(exit.Stdout), &sum); err != nil {
		t.Fatalf("summary %q: %v", exit.Stdout, err)
	}
	if sum != (actor.RelaySummary{Claimed: 1, Published: 1, Marked: 1}) {
		t.Errorf("summary = %+v; want 1 claimed, published and marked", sum)
	}

	var state, claimID string
	var version int64
	if err := sc.DB.QueryRowContext(t.Context(), `SELECT state, claim_version, claim_id FROM outbox WHERE event_id = ?`, eventID).
		Scan(&state, &version, &claimID); err != nil {
		t.Fatal(err)
	}
	if state != evidence.StateSent || version != 1 || claimID != "relay-a-r1" {
		t.Errorf("outbox row = %s v%d %s; want SENT v1 relay-a-r1", state, version, claimID)
	}

	events, truncated := readLog(t, logPath)
	if truncated {
		t.Errorf("log of a clean exit is truncated")
	}
	if got := strings.Join(kinds(events), ","); got != "claim,publish,mark" {
		t.Fatalf("log kinds = %s; want claim,publish,mark", got)
	}
	for _, e := range events {
		if e.Actor != "relay-a" || e.RunID != "r1" || e.Scenario != "actorRelay" || e.EventID != eventID {
			t.Errorf("event %+v: wrong actor, run, scenario or event id", e)
		}
	}
	if m := events[2]; m.Rows == nil || *m.Rows != 1 {
		t.Errorf("mark rows = %v; want 1", m.Rows)
	}

	// The broker holds exactly that one record.
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ends.Lookup(topic, 0); !ok || o.Offset != 1 {
		t.Errorf("end offset of %s = %+v; want 1", topic, o)
	}
}

// produceIntent publishes one record as the relay does: key the order id,
// header event_id, the intent's payload.
func produceIntent(t *testing.T, k *infra.Kafka, topic string, id int64) string {
	t.Helper()
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	eventID := evidence.EventIDFor(id)
	rec := &kgo.Record{
		Topic:   topic,
		Key:     []byte(fmt.Sprint(id)),
		Value:   []byte(fmt.Sprintf(`{"orderId":%d,"sku":"SKU-1","quantity":1,"amountCents":1250}`, id)),
		Headers: []kgo.RecordHeader{{Key: "event_id", Value: []byte(eventID)}},
	}
	if err := cl.ProduceSync(t.Context(), rec).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return eventID
}

func TestActorConsumerKilledAfterEffect(t *testing.T) {
	exe := binary(t)
	srv := infratest.Server(t)
	sc := infratest.Scratch(t)
	k := infratest.Kafka(t)
	topic := infratest.Topic(t, k)
	eventID := produceIntent(t, k, topic, 7)
	logPath := filepath.Join(t.TempDir(), "consumer-1.jsonl")
	group := "g-" + infratest.RandomID()

	spec := actor.Spec{
		Role: actor.Consumer, DB: sc.Name, Brokers: k.Brokers, Topic: topic, Group: group,
		Once: true, UntilEffects: 1, Timeout: 30 * time.Second,
		LogPath: logPath, RunID: "r1", Scenario: "actorConsumer", Actor: "consumer-1",
		Faults: []string{string(spec.AfterEffectBeforeOffsetCommit) + ":kill"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	p, err := actor.Start(ctx, exe, spec, actor.Env(srv.DSNFor(""), nil))
	if err != nil {
		t.Fatal(err)
	}
	exit, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !exit.Killed() {
		t.Fatalf("consumer actor: %s; want killed by SIGKILL (stderr %s)", exit, exit.Stderr)
	}
	if exit.Stdout != "" {
		t.Errorf("a killed consumer printed a summary: %q", exit.Stdout)
	}

	// The effect committed before the kill: one inbox row, one notification.
	for _, table := range []string{"inbox", "notification"} {
		var n int
		if err := sc.DB.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM "+table+" WHERE event_id = ?", eventID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s rows for %s = %d; want 1", table, eventID, n)
		}
	}

	// The log ends consistently: every complete line is a valid event, the
	// effect is there and no offset commit is claimed.
	events, truncated := readLog(t, logPath)
	got := strings.Join(kinds(events), ",")
	if want := "group_join,partition_assigned,receive,inbox_insert,effect"; got != want {
		t.Errorf("log kinds = %s (truncated tail: %v); want %s", got, truncated, want)
	}

	// The offset was never committed: the group has no committed offset.
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); ok && o.At >= 0 {
		t.Errorf("group %s committed offset %d; want none", group, o.At)
	}
}

func TestActorOrdersProcess(t *testing.T) {
	exe := binary(t)
	srv := infratest.Server(t)
	sc := infratest.Scratch(t)
	if _, err := sc.DB.ExecContext(t.Context(), `INSERT INTO stock (sku, quantity, price_cents) VALUES ('SKU-1', 5, 1250)`); err != nil {
		t.Fatal(err)
	}
	secret := bytes.Repeat([]byte{0x5a}, 32)
	logPath := filepath.Join(t.TempDir(), "orders.jsonl")
	as := actor.Spec{Role: actor.Orders, DB: sc.Name, LogPath: logPath, RunID: "r1", Scenario: "actorOrders"}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	p, err := actor.Start(ctx, exe, as, actor.Env(srv.DSNFor(""), secret))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") {
		t.Fatalf("URL = %q", p.URL)
	}

	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Subject: "alice", ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Minute)),
		Issuer: spec.TokenIssuer, Audience: jwt.ClaimStrings{spec.TokenAudience}, // the service's policy
	}).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/orders", strings.NewReader(`{"sku":"SKU-1","quantity":2}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Idempotency-Key", "k-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /orders = %d %s; want 201", resp.StatusCode, body)
	}

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exit, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if exit.Code != exitOK {
		t.Fatalf("orders actor after SIGTERM: %s; want exit 0 (stderr %s)", exit, exit.Stderr)
	}
	var stock int
	if err := sc.DB.QueryRowContext(t.Context(), `SELECT quantity FROM stock WHERE sku = 'SKU-1'`).Scan(&stock); err != nil {
		t.Fatal(err)
	}
	if stock != 3 {
		t.Errorf("stock = %d; want 3", stock)
	}
	events, truncated := readLog(t, logPath)
	if truncated || len(events) != 1 || events[0].Kind != evidence.KindOrderCommitted {
		t.Errorf("log = %s (truncated %v); want one order_committed", strings.Join(kinds(events), ","), truncated)
	}
}

func TestActorRefusesForeignDatabase(t *testing.T) {
	srv := infratest.Server(t)
	name := "ofa_t_" + infratest.RandomID() + "_foreign"
	if _, err := srv.DB().ExecContext(t.Context(), "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.DB().ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`") })
	t.Setenv(infra.EnvMySQLDSN, srv.DSNFor(""))
	t.Setenv(actor.EnvJWTSecret, hex.EncodeToString(bytes.Repeat([]byte{1}, 32)))
	code, _, errs := runCLI(t, "actor", "orders", "--db", name)
	if code != exitUsage || !strings.Contains(errs, "marker") {
		t.Fatalf("actor orders on a foreign database: exit %d, stderr %q; want 2 naming the marker", code, errs)
	}
}

func TestActorRelayFaults(t *testing.T) {
	exe := binary(t)
	srv := infratest.Server(t)
	k := infratest.Kafka(t)
	tests := []struct {
		name       string
		fault      string
		wantKilled bool
		wantCode   int
		wantKinds  string
	}{
		{"kill after publish", string(spec.AfterPublishBeforeMark) + ":kill", true, -1, "claim,publish"},
		{"crash after publish", string(spec.AfterPublishBeforeMark) + ":crash", false, exitCrashed, "claim,publish,fault"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := infratest.Scratch(t)
			topic := infratest.Topic(t, k)
			eventID := seedIntent(t, sc, 9)
			logPath := filepath.Join(t.TempDir(), "relay-a.jsonl")
			spec := actor.Spec{
				Role: actor.Relay, DB: sc.Name, Brokers: k.Brokers, Topic: topic, Once: true,
				LogPath: logPath, RunID: "r1", Scenario: "sendBeforeMarkCrash", Actor: "relay-a",
				Faults: []string{tt.fault},
			}
			p, err := actor.Start(t.Context(), exe, spec, actor.Env(srv.DSNFor(""), nil))
			if err != nil {
				t.Fatal(err)
			}
			exit, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if exit.Killed() != tt.wantKilled || (!tt.wantKilled && exit.Code != tt.wantCode) {
				t.Fatalf("relay actor: %s; want killed=%v code=%d (stderr %s)", exit, tt.wantKilled, tt.wantCode, exit.Stderr)
			}
			if !tt.wantKilled {
				var sum actor.RelaySummary
				if err := json.Unmarshal([]byte(exit.Stdout), &sum); err != nil || sum.Crashed != eventID || sum.Marked != 0 {
					t.Errorf("summary %q (%v); want crashed=%s, nothing marked", exit.Stdout, err, eventID)
				}
			}
			// Published, never marked: the row is still CLAIMED by version 1.
			var state string
			var version int64
			if err := sc.DB.QueryRowContext(t.Context(), `SELECT state, claim_version FROM outbox WHERE event_id = ?`, eventID).
				Scan(&state, &version); err != nil {
				t.Fatal(err)
			}
			if state != evidence.StateClaimed || version != 1 {
				t.Errorf("outbox row = %s v%d; want CLAIMED v1", state, version)
			}
			events, _ := readLog(t, logPath)
			if got := strings.Join(kinds(events), ","); got != tt.wantKinds {
				t.Errorf("log kinds = %s; want %s", got, tt.wantKinds)
			}
		})
	}
}
