package main

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/migrations"
	"github.com/orderflow-audit/orderflow-audit/runner/audit"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// ownPassword is the password of the account the tests audit "your own
// server" with: it must show nowhere, neither in output nor in the bundle.
const ownPassword = "Own-srv-pw-5e1f"

// ownServer starts a private mariadbd (binary log on) standing in for the
// user's server, with an account auditor:ownPassword granted grants, and
// returns its DSN and a root connection.
func ownServer(t *testing.T, grants ...string) (string, *sql.DB) {
	t.Helper()
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	root, err := sql.Open("mysql", m.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	stmts := []string{"CREATE USER 'auditor'@'%' IDENTIFIED BY '" + ownPassword + "'",
		"CREATE USER 'auditor'@'localhost' IDENTIFIED BY '" + ownPassword + "'"}
	for _, g := range grants {
		stmts = append(stmts, "GRANT "+g+" TO 'auditor'@'%'", "GRANT "+g+" TO 'auditor'@'localhost'")
	}
	for _, s := range stmts {
		if _, err := root.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return fmt.Sprintf("auditor:%s@tcp(127.0.0.1:%d)/", ownPassword, m.Port), root
}

// ownKafka starts an embedded broker in the test, standing in for the
// user's Kafka cluster (the audit reaches it as broker: external).
func ownKafka(t *testing.T) *infra.Kafka {
	t.Helper()
	k, err := infra.StartKafka(context.Background(), infra.KafkaConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

// ownProfile is the reference profile pointed at dsn and brokers.
func ownProfile(t *testing.T, dsn string, brokers []string, edit ...string) string {
	t.Helper()
	return referenceProfile(t, append([]string{
		"database:                        # globs relative to this file's directory",
		"database:\n  dsn: \"" + dsn + "\"",
		"broker: {mode: embedded}", "broker: {mode: external, brokers: [" + strings.Join(brokers, ", ") + "]}",
	}, edit...)...)
}

// noPassword fails when the password shows in s or in any file under dir.
func noPassword(t *testing.T, what, s, dir string) {
	t.Helper()
	if strings.Contains(s, ownPassword) {
		t.Errorf("%s shows the DSN's password:\n%s", what, s)
	}
	if dir == "" {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), ownPassword) {
				t.Errorf("%s holds the DSN's password", p)
			}
		}
		return nil
	})
}

// TestAuditOwnServer audits the reference pipeline on "your own" server
// and broker: a mariadbd the test started (binlog on) reached through an
// account with a password, and a broker the test runs, named as external.
// The binlog is streamed, the topic dumped, db-crash and the broker's
// faults are left out (and said so), the verdict is PASS, the run's
// database and topic are gone afterwards, and the password is nowhere.
func TestAuditOwnServer(t *testing.T) {
	dsn, root := ownServer(t, "REPLICATION SLAVE, BINLOG MONITOR, RELOAD ON *.*", "ALL ON `ofa\\_%`.*")
	k := ownKafka(t)
	r := runAudit(t, ownProfile(t, dsn, k.Brokers), "--seed", "2", "--duration", "3s", "--faults", "all")
	if r.code != exitOK {
		t.Fatalf("exit %d; want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	line := strings.SplitN(r.stdout, "\n", 2)[0]
	if !strings.Contains(line, "PASS") || strings.Contains(line, "events committed 0,") {
		t.Errorf("observation line %q: want PASS with events", line)
	}
	for _, want := range []string{"db-crash: the audit never kills a server it did not start", "broker-restart: the broker's faults need the embedded broker", "your server auditor:xxxxx@"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	noPassword(t, "stdout", r.stdout, "")
	noPassword(t, "stderr", r.stderr, filepath.Dir(r.out))
	bb := readBlackBox(t, r.out)
	if w := bb.Witness; w.Database == nil || w.Database.Source != evidence.WitnessBinlogStream || w.Broker == nil || w.Broker.Source != evidence.WitnessKafkaDump {
		t.Errorf("witnesses %+v: want the binlog streamed and the broker dumped", w)
	}
	if code, out, _ := runCLI(t, "verify", r.out); code != exitOK || !strings.Contains(out, "PASS") {
		t.Errorf("verify %s: exit %d; want 0 PASS\n%s", r.out, code, out)
	}
	// Nothing of the run is left on the user's server or broker.
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'ofa\\_%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("databases of the run left on the server: %d (%v)", n, err)
	}
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if td, err := kadm.NewClient(cl).ListTopics(ctx); err != nil || td.Has("orders") {
		t.Errorf("the run's topic is left on the broker (%v)", err)
	}
}

// TestAuditOwnServerPreflight: a server that cannot witness the audit,
// or an account that may not do what it does, ends the audit before
// anything starts with exit 3 and the cause; db-crash asked for by name
// on your own server is refused (exit 2).
func TestAuditOwnServerPreflight(t *testing.T) {
	t.Run("binlog off", func(t *testing.T) {
		// The shared server of this machine runs without a binary log.
		c, err := net.DialTimeout("tcp", "127.0.0.1:3306", time.Second)
		if err != nil {
			t.Skipf("no server on 127.0.0.1:3306: %v", err)
		}
		c.Close()
		db, err := sql.Open("mysql", "root@tcp(127.0.0.1:3306)/")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var logBin int
		if err := db.QueryRow("SELECT @@GLOBAL.log_bin").Scan(&logBin); err != nil || logBin != 0 {
			t.Skipf("the server on 127.0.0.1:3306 has log_bin=%d (%v): this case needs it off", logBin, err)
		}
		p := ownProfile(t, "root@tcp(127.0.0.1:3306)/", []string{"127.0.0.1:1"})
		code, out, errs := runCLI(t, "audit", "--profile", p, "--out", filepath.Join(t.TempDir(), "a.json"), "--faults", "none")
		if code != exitUnavailable || !strings.Contains(errs, "log_bin is OFF") || !strings.Contains(errs, "preflight") {
			t.Errorf("exit %d; want 3 naming log_bin is OFF\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
	})
	t.Run("privileges", func(t *testing.T) {
		dsn, _ := ownServer(t, "SELECT ON *.*")
		k := ownKafka(t)
		code, out, errs := runCLI(t, "audit", "--profile", ownProfile(t, dsn, k.Brokers), "--out", filepath.Join(t.TempDir(), "a.json"), "--faults", "none")
		if code != exitUnavailable {
			t.Fatalf("exit %d; want 3\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		for _, want := range []string{"BINLOG MONITOR", "RELOAD", "REPLICATION SLAVE", "GRANT REPLICATION SLAVE, BINLOG MONITOR, RELOAD ON *.*",
			"CREATE ON `ofa\\_%`.*"} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errs)
			}
		}
		noPassword(t, "stderr", errs, "")
	})
	t.Run("a mapped table it may not read", func(t *testing.T) {
		dsn, root := ownServer(t, "REPLICATION SLAVE, BINLOG MONITOR, RELOAD ON *.*")
		for _, q := range []string{"CREATE DATABASE ofa_noread", "CREATE TABLE ofa_noread.outbox (id INT)", "CREATE TABLE ofa_noread.orders (id INT)",
			"GRANT SELECT ON ofa_noread.outbox TO 'auditor'@'%'", "GRANT SELECT ON ofa_noread.outbox TO 'auditor'@'localhost'"} {
			if _, err := root.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		k := ownKafka(t)
		path := ownProfile(t, dsn, k.Brokers)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(b), "  migrations: ", "  schema: ofa_noread\n  #", 1)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI(t, "audit", "--profile", path, "--out", filepath.Join(t.TempDir(), "a.json"), "--faults", "none")
		if code != exitUnavailable || !strings.Contains(errs, "table ofa_noread.orders, which the profile maps, cannot be read") {
			t.Errorf("exit %d; want 3 naming ofa_noread.orders\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		noPassword(t, "stderr", errs, "")
	})
	t.Run("db-crash", func(t *testing.T) {
		p := ownProfile(t, "auditor:"+ownPassword+"@tcp(127.0.0.1:1)/", []string{"127.0.0.1:1"})
		code, _, errs := runCLI(t, "audit", "--profile", p, "--out", filepath.Join(t.TempDir(), "a.json"), "--faults", "kill,db-crash")
		if code != exitUsage || !strings.Contains(errs, "never kills a server it did not start") {
			t.Errorf("exit %d; want 2 refusing db-crash\n%s", code, errs)
		}
		noPassword(t, "stderr", errs, "")
	})
}

// sqlLoadProfile is the reference profile without its order service: the
// audit's own client writes the orders, an order and its outbox row in one
// transaction as the order service does, the token in the payload's note.
func sqlLoadProfile(t *testing.T, edit ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "profiles", "reference.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	load := s[strings.Index(s, "\nload:\n"):strings.Index(s, "\n# The roles run")]
	service := s[strings.Index(s, "\n  service:\n"):strings.Index(s, "\n  relay:\n")]
	return referenceProfile(t, append([]string{load, `
load:
  sql:
    statements:
      - |
        INSERT INTO orders (principal, sku, quantity, amount_cents) VALUES ('audit-client', 'SKU-1', 1, 100)
      - |
        INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state)
        VALUES (CONCAT('e-', LAST_INSERT_ID()), LAST_INSERT_ID(), 1,
                JSON_OBJECT('orderId', LAST_INSERT_ID(), 'sku', 'SKU-1', 'quantity', 1, 'amountCents', 100, 'note', {{token}}),
                'PENDING')
  correlate: "payload$.note"
  concurrency: 4`, service, ""}, edit...)...)
}

// TestAuditSQLLoad audits a pipeline with no HTTP service, only a relay
// and a consumer: the audit's client writes the orders through the
// database, every transaction recorded in its history; the verdict is
// PASS, and the answer rule held every request to the binlog.
func TestAuditSQLLoad(t *testing.T) {
	r := runAudit(t, sqlLoadProfile(t), "--seed", "4", "--duration", "3s", "--faults", "kill,pause,net-cut")
	if r.code != exitOK {
		t.Fatalf("exit %d; want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	line := strings.SplitN(r.stdout, "\n", 2)[0]
	if !strings.Contains(line, "PASS") || strings.Contains(line, "requests ok 0 ") || strings.Contains(line, "events committed 0,") {
		t.Errorf("observation line %q: want PASS with requests committed", line)
	}
	bb := readBlackBox(t, r.out)
	if bb.Client.Requests == nil || *bb.Client.Requests == 0 {
		t.Errorf("the bundle records no request of the client: %+v", bb.Client)
	}
	answer := ""
	for _, c := range bb.Claims.Rules {
		if c.ID == "answer" {
			answer = c.Status
		}
	}
	if answer != "PASS" {
		t.Errorf("rule answer: %q; want PASS (the client's history held to the binlog)", answer)
	}
}

// TestAuditOwnServerSchema audits a database of "your own" server used as
// it is (database.schema, no migrations): the tables and the stock are
// the user's, made before the audit (named ofa_*: the reference actors
// run only in such databases); the verdict is PASS, the audit's
// events are in the user's tables, and the database is still there, with
// its rows, afterwards (the audit creates and drops nothing in it).
func TestAuditOwnServerSchema(t *testing.T) {
	dsn, root := ownServer(t, "REPLICATION SLAVE, BINLOG MONITOR, RELOAD ON *.*", "ALL ON `ofa_shop_asis`.*")
	ctx := context.Background()
	if _, err := root.ExecContext(ctx, "CREATE DATABASE ofa_shop_asis"); err != nil {
		t.Fatal(err)
	}
	shop, err := sql.Open("mysql", dsn+"ofa_shop_asis") // the auditor's account: ALL on it
	if err != nil {
		t.Fatal(err)
	}
	defer shop.Close()
	if _, err := migrations.Apply(ctx, shop); err != nil {
		t.Fatal(err)
	}
	stock, err := os.ReadFile(filepath.Join("..", "..", "profiles", "reference-stock.sql"))
	if err != nil {
		t.Fatal(err)
	}
	// The reference actors run only where the tool's marker is (the row
	// a database the tool creates carries): the user puts it there.
	for _, q := range append(migrations.SplitStatements(string(stock)), "INSERT INTO ofa_marker (id, tool, run_id) VALUES (1, 'orderflow-audit', 'as-is')") {
		if _, err := shop.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	k := ownKafka(t)
	path := ownProfile(t, dsn, k.Brokers)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  migrations: ") {
			lines[i] = "  schema: ofa_shop_asis"
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}

	r := runAudit(t, path, "--seed", "3", "--duration", "3s", "--faults", "kill,pause,latency")
	if r.code != exitOK {
		t.Fatalf("exit %d; want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	bb := readBlackBox(t, r.out)
	if bb.Target.Database != "ofa_shop_asis" {
		t.Errorf("the bundle audits database %q; want ofa_shop_asis", bb.Target.Database)
	}
	var events, sent, stockRows int
	if err := shop.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(state = 'SENT'), 0) FROM outbox").Scan(&events, &sent); err != nil {
		t.Fatalf("the database is not there afterwards: %v", err)
	}
	if err := shop.QueryRowContext(ctx, "SELECT COUNT(*) FROM stock").Scan(&stockRows); err != nil {
		t.Fatal(err)
	}
	if events == 0 || sent != events || stockRows != 1 {
		t.Errorf("afterwards: %d outbox rows, %d sent, %d stock rows; want the run's events, all sent, and the user's stock row", events, sent, stockRows)
	}
	line := strings.SplitN(r.stdout, "\n", 2)[0]
	if !strings.Contains(line, fmt.Sprintf("events committed %d,", events)) {
		t.Errorf("observation line %q: want the %d events the database holds", line, events)
	}
	var names string
	if err := root.QueryRowContext(ctx, "SELECT COALESCE(GROUP_CONCAT(SCHEMA_NAME), '') FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'ofa\\_%'").Scan(&names); err != nil || names != "ofa_shop_asis" {
		t.Errorf("databases ofa_* on the server afterwards: %q (%v); want the user's alone", names, err)
	}
	noPassword(t, "stderr", r.stderr, filepath.Dir(r.out))
}

// TestAuditSQLLoadClientLink: with a SQL load, the audit's own client
// reaches the database through a proxy of its own, and the nemesis slows
// and cuts that link too (target "client>database"); requests cut off
// are unknown outcomes the binlog settles, and the verdict is PASS.
func TestAuditSQLLoadClientLink(t *testing.T) {
	path := sqlLoadProfile(t)
	p, err := profile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []nemesis.Kind{nemesis.Latency, nemesis.NetCut}
	seed := int64(0)
	for s := int64(1); s < 100 && seed == 0; s++ {
		for _, f := range audit.Schedule(audit.Options{Profile: p, Seed: s, Duration: 3 * time.Second, Faults: kinds}) {
			if f.Target == audit.ClientTarget+">database" && f.Kind == nemesis.NetCut {
				seed = s
			}
		}
	}
	if seed == 0 {
		t.Fatal("no seed of 1..99 cuts the client's link in 3 s")
	}
	r := runAudit(t, path, "--seed", strconv.FormatInt(seed, 10), "--duration", "3s", "--faults", "latency,net-cut")
	if r.code != exitOK {
		t.Fatalf("seed %d: exit %d; want 0\nstdout:\n%s\nstderr:\n%s", seed, r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(r.out), "audit", "nemesis.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cut := false
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		cut = cut || strings.Contains(line, `"kind":"net-cut","target":"client>database"`) && strings.Contains(line, `"result":"done"`)
	}
	if !cut {
		t.Errorf("seed %d: no cut of the client's link applied:\n%s", seed, b)
	}
}
