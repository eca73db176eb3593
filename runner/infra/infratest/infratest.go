// Package infratest gives integration tests a scratch database and a Kafka
// broker. Outside CI an unreachable MariaDB skips the test; with CI set it
// fails it: integration tests never silently skip in CI. -short skips them.
package infratest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

var (
	serverOnce sync.Once
	server     *infra.Server
	serverErr  error
	// runID is this test process's run id in the marker of its scratch
	// databases; the process holds its lock (infra.LockName) so that
	// `orderflow-audit clean` leaves them alone while it lives.
	runID = "test_" + RandomID()
)

// Server returns a connection to the test server (ORDERFLOW_MYSQL_DSN or the
// default), shared by the tests of one package.
func Server(t testing.TB) *infra.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs MariaDB (skipped with -short)")
	}
	serverOnce.Do(func() {
		cfg, err := infra.ResolveDSN("")
		if err != nil {
			serverErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		server, serverErr = infra.Connect(ctx, cfg)
		if serverErr == nil {
			// Held until the process ends.
			_, serverErr = server.HoldLock(ctx, infra.LockName(runID))
		}
	})
	if serverErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and MariaDB is unavailable: %v", serverErr)
		}
		t.Skipf("MariaDB unavailable (set CI to make this fail): %v", serverErr)
	}
	return server
}

// Scratch creates a migrated scratch database for this test and drops it in
// t.Cleanup.
func Scratch(t testing.TB) *infra.Scratch {
	t.Helper()
	s := Server(t)
	name := infra.ScratchName("t", RandomID(), testName(t))
	sc, err := s.CreateScratch(context.Background(), name, runID)
	if err != nil {
		t.Fatalf("create scratch database: %v", err)
	}
	t.Cleanup(func() {
		if err := sc.Drop(context.Background()); err != nil {
			t.Errorf("drop scratch database %s: %v", sc.Name, err)
		}
	})
	return sc
}

// Kafka starts an embedded broker for this test, closed in t.Cleanup. With
// ORDERFLOW_KAFKA_BROKERS set it uses that cluster instead.
func Kafka(t testing.TB) *infra.Kafka {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs a Kafka broker (skipped with -short)")
	}
	k, err := infra.StartKafka(context.Background(), infra.KafkaConfig{Brokers: infra.ResolveBrokers("")})
	if err != nil {
		t.Fatalf("start Kafka: %v", err)
	}
	t.Cleanup(k.Close)
	return k
}

// Topic creates a fresh topic with one partition, named after the test.
func Topic(t testing.TB, k *infra.Kafka) string {
	t.Helper()
	name := "ofa-" + strings.ReplaceAll(infra.ScratchName("t", RandomID(), testName(t)), "_", "-")
	if err := k.CreateTopic(context.Background(), name, 1); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	return name
}

// RandomID returns 8 random hex characters.
func RandomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func testName(t testing.TB) string {
	n := strings.ToLower(t.Name())
	if len(n) > 30 {
		n = n[len(n)-30:]
	}
	return n
}
