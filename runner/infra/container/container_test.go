package container_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/runner/infra/container"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// ours lists the ids of the containers, running or not, labelled with run.
func ours(t *testing.T, label, value string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+label+"="+value).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// TestStartDB: a database container of local/mariadb is reached as
// root with the run's password, writes the binary log the witness reads
// (binlog.Check passes), is labelled with the run, and is gone after
// Terminate.
func TestStartDB(t *testing.T) {
	infratest.RequireContainers(t)
	run := "test_db_" + strconv.Itoa(os.Getpid())
	db, err := container.StartDB(t.Context(), container.Config{Image: infratest.LocalMariaDB, RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Terminate() })
	if !strings.HasPrefix(db.Image.ID, "sha256:") || db.Image.Ref != infratest.LocalMariaDB || db.Image.Engine == "" {
		t.Errorf("image %+v: want the reference, a sha256 id and the engine", db.Image)
	}
	if got := ours(t, container.LabelRun, run); len(got) != 1 {
		t.Errorf("containers labelled %s=%s: %v; want 1", container.LabelRun, run, got)
	}
	if db.Config().Passwd == "" || !strings.HasPrefix(db.Config().Addr, "127.0.0.1:") {
		t.Errorf("DSN %s: want a password and a loopback address", db.Config().Addr)
	}
	conn, err := sql.Open("mysql", db.Config().FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := binlog.Check(t.Context(), conn); err != nil {
		t.Errorf("the container's binary log cannot witness a run: %v", err)
	}
	if err := db.Terminate(); err != nil {
		t.Fatal(err)
	}
	if got := ours(t, container.LabelRun, run); len(got) != 0 {
		t.Errorf("containers left after Terminate: %v", got)
	}
}

// TestStartBroker: the local/broker image runs kfake (recorded as such,
// never as Apache Kafka), advertising the published port, and answers
// over the Kafka protocol.
func TestStartBroker(t *testing.T) {
	infratest.RequireContainers(t)
	run := "test_broker_" + strconv.Itoa(os.Getpid())
	b, err := container.StartBroker(t.Context(), container.Config{Image: infratest.LocalBroker, RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Terminate() })
	if !strings.HasPrefix(b.Implementation, "kfake ") || !strings.Contains(b.Implementation, "not Apache Kafka") {
		t.Errorf("implementation %q: want kfake, not Apache Kafka", b.Implementation)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).BrokerMetadata(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Host+":"+strconv.Itoa(int(md.Brokers[0].Port)) != b.Brokers[0] {
		t.Errorf("the broker advertises %+v; want %s (the published port)", md.Brokers, b.Brokers[0])
	}
	if err := b.Terminate(); err != nil {
		t.Fatal(err)
	}
	if got := ours(t, container.LabelRun, run); len(got) != 0 {
		t.Errorf("containers left after Terminate: %v", got)
	}
}

// TestStartFailureLeavesNothing: a container whose server exits (the
// MariaDB image taken for a broker: its entrypoint refuses to start without
// a root password) fails the start quickly with the end of its log, and is
// removed; so is one whose start is cancelled (Ctrl-C).
func TestStartFailureLeavesNothing(t *testing.T) {
	infratest.RequireContainers(t)
	run := "test_fail_" + strconv.Itoa(os.Getpid())
	t0 := time.Now()
	_, err := container.StartBroker(t.Context(), container.Config{Image: infratest.LocalMariaDB, RunID: run})
	if err == nil || !strings.Contains(err.Error(), "MARIADB_ROOT_PASSWORD") {
		t.Errorf("start of a broker that exits: %v; want the container's log naming MARIADB_ROOT_PASSWORD", err)
	}
	if d := time.Since(t0); d > 30*time.Second {
		t.Errorf("a container that exited was waited for %v", d)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	if db, err := container.StartDB(ctx, container.Config{Image: infratest.LocalMariaDB, RunID: run}); err == nil {
		_ = db.Terminate()
		t.Log("the database container was up within 150 ms: the cancelled start was not exercised")
	}
	if got := ours(t, container.LabelRun, run); len(got) != 0 {
		t.Errorf("containers left after failed starts: %v", got)
	}
}

// TestSweepRemovesAbandoned: a container labelled with a process of this
// host that is gone (a run killed outright) is removed by the next start;
// one of a live process, or of another host, is not.
func TestSweepRemovesAbandoned(t *testing.T) {
	infratest.RequireContainers(t)
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	run := "test_sweep_" + strconv.Itoa(os.Getpid())
	owners := map[string]bool{ // owner label -> want swept
		host + " " + strconv.Itoa(dead.Process.Pid) + " 1": true,
		host + " " + strconv.Itoa(os.Getpid()):             false,
		"elsewhere " + strconv.Itoa(dead.Process.Pid):      false,
	}
	for owner := range owners {
		out, err := exec.Command("docker", "create", "--label", container.LabelRun+"="+run,
			"--label", container.LabelOwner+"="+owner, infratest.LocalBroker).CombinedOutput()
		if err != nil {
			t.Fatalf("docker create: %v\n%s", err, out)
		}
		id := strings.TrimSpace(string(out))
		t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
	}
	b, err := container.StartBroker(t.Context(), container.Config{Image: infratest.LocalBroker, RunID: run + "_next"})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Terminate()
	for owner, swept := range owners {
		left := ours(t, container.LabelOwner, owner)
		if swept != (len(left) == 0) {
			t.Errorf("container of owner %q: left %v; want swept %v", owner, left, swept)
		}
	}
}

// TestNoEngine: with no engine reachable the error wraps ErrNoEngine.
// Only runnable where no engine answers at all; the CLI test runs it in a
// mount namespace that hides the engine.
func TestNoEngine(t *testing.T) {
	infratest.RyukOff(t) // testcontainers reads its settings once per process, at its first use
	if _, err := container.EngineVersion(t.Context()); err == nil {
		t.Skip("an engine answers here (cmd/orderflow-audit TestRunNoContainerEngine hides it)")
	} else if !errors.Is(err, container.ErrNoEngine) {
		t.Fatalf("EngineVersion: %v; want ErrNoEngine", err)
	}
	_, err := container.StartDB(t.Context(), container.Config{RunID: "x"})
	if !errors.Is(err, container.ErrNoEngine) {
		t.Errorf("StartDB without an engine: %v; want ErrNoEngine", err)
	}
}
