// Package testserver starts a private mariadbd for the witness tests: the
// production private server of internal/mariadbd (a fresh data
// directory, loopback TCP on a free port, the binary log switched on the
// way a run has it: ROW format, FULL row image, FULL row metadata), with
// server_id ServerID, so that the tests read real binlog files without
// touching the shared server's configuration. Only tests import it: the
// witness packages themselves import neither the runner nor the verifier.
package testserver

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
)

// ServerID is the server_id every test server runs with; GTIDs read from
// its binlog are "0-7-<seq>".
const ServerID = 7

// Options change how a server starts. The zero value is the run's
// configuration: binlog on, ROW, FULL image, FULL metadata.
type Options struct {
	// NoBinlog starts the server without --log-bin, to test the error
	// that names it.
	NoBinlog bool
	// Args are extra mariadbd arguments, appended last so that they win
	// (e.g. "--binlog-row-metadata=MINIMAL").
	Args []string
}

// Server is one running private mariadbd.
type Server struct {
	DataDir string
	// LogBase is the --log-bin base name: files are LogBase.000001, ...
	LogBase string
	Port    int
	// DSN is root over TCP, no database, parseTime off.
	DSN string

	srv *mariadbd.Server
	cfg mariadbd.Config
}

// Require skips the test with -short, and when the MariaDB binaries are
// missing skips it outside CI and fails it with CI set: integration tests
// never silently skip in CI.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts a private mariadbd (skipped with -short)")
	}
	if _, err := mariadbd.FindBinaries(""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and the MariaDB server binaries are missing: %v", err)
		}
		t.Skipf("MariaDB server binaries missing (set CI to make this fail): %v", err)
	}
}

// Start starts a server for this test and stops it, removing its data, in
// t.Cleanup. It calls Require first.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	Require(t)
	cfg := mariadbd.Config{ServerID: ServerID, NoBinlog: opts.NoBinlog, Args: opts.Args}
	srv, err := mariadbd.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start private mariadbd: %v", err)
	}
	s := &Server{DataDir: srv.DataDir, LogBase: srv.LogBase, Port: srv.Port, DSN: srv.DSN(), srv: srv, cfg: cfg}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop private mariadbd: %v", err)
		}
		if err := srv.Remove(); err != nil {
			t.Errorf("remove private mariadbd: %v", err)
		}
	})
	return s
}

// Stop shuts the server down with SIGTERM (a clean shutdown that closes the
// last binlog file with a STOP event) and kills it if it takes over 20 s.
// A second call is a no-op.
func (s *Server) Stop() error { return s.srv.Stop(20 * time.Second) }

// Crash kills the server with SIGKILL and starts it again on its data
// directory and port (crash recovery), waiting until it accepts logins.
func (s *Server) Crash(t testing.TB) {
	t.Helper()
	if _, err := s.srv.Crash(context.Background(), s.cfg); err != nil {
		t.Fatalf("crash and restart: %v", err)
	}
}

// DB opens a connection pool to the server (optionally to one database),
// closed in t.Cleanup.
func (s *Server) DB(t testing.TB, database string) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(s.DSN)
	if err != nil {
		t.Fatalf("parse DSN: %v", err)
	}
	cfg.DBName = database
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("open %s: %v", database, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Main runs a package's tests and then checks that they left no goroutine
// behind (a replication stream, a Kafka client, a connection pool that was
// not closed): the goroutine count must come back to where it started
// within a few seconds. Use it as TestMain: os.Exit(testserver.Main(m)).
func Main(m *testing.M) int {
	base := runtime.NumGoroutine()
	code := m.Run()
	if code != 0 {
		return code
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			fmt.Fprintf(os.Stderr, "leak: %d goroutines after the tests, %d before:\n%s\n", runtime.NumGoroutine(), base, buf[:n])
			return 1
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0
}
