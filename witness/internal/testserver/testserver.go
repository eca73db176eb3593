// Package testserver starts a private mariadbd for the witness tests: a
// fresh data directory, loopback TCP on a free port, and the binary log
// switched on the way a run will have it (ROW format, FULL row image, FULL
// row metadata, a fixed server_id), so that the tests read real binlog files
// without touching the shared server's configuration.
//
// It is deliberately small and private to witness/: the lead will unify it
// with the project's general private-server helper.
package testserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
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

	cmd  *exec.Cmd
	done chan error
}

// Binaries returns the paths of mariadb-install-db and mariadbd, or an
// error naming the one that is missing.
func Binaries() (installDB, mariadbd string, err error) {
	installDB, err = exec.LookPath("mariadb-install-db")
	if err != nil {
		return "", "", fmt.Errorf("find mariadb-install-db: %w", err)
	}
	for _, p := range []string{"mariadbd", "/usr/sbin/mariadbd", "/usr/libexec/mariadbd"} {
		if mariadbd, err = exec.LookPath(p); err == nil {
			return installDB, mariadbd, nil
		}
	}
	return "", "", fmt.Errorf("find mariadbd: %w", err)
}

// Require skips the test with -short, and when the MariaDB binaries are
// missing skips it outside CI and fails it with CI set: integration tests
// never silently skip in CI.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts a private mariadbd (skipped with -short)")
	}
	if _, _, err := Binaries(); err != nil {
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
	dir, err := os.MkdirTemp("", "ofa-witness-")
	if err != nil {
		t.Fatalf("make data directory: %v", err)
	}
	s, err := start(dir, opts)
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("start private mariadbd: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop private mariadbd: %v", err)
		}
		_ = os.RemoveAll(dir)
	})
	return s
}

func start(dir string, opts Options) (*Server, error) {
	installDB, mariadbd, err := Binaries()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	install := exec.Command(installDB, "--no-defaults", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{DataDir: data, Port: port, LogBase: filepath.Join(dir, "binlog"), done: make(chan error, 1)}
	args := []string{"--no-defaults", "--datadir=" + data, "--socket=" + filepath.Join(dir, "s.sock"),
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-name-resolve", "--user=root",
		"--pid-file=" + filepath.Join(dir, "mariadbd.pid"), "--log-error=" + filepath.Join(dir, "error.log"),
		"--server-id=" + strconv.Itoa(ServerID), "--innodb-buffer-pool-size=32M"}
	if !opts.NoBinlog {
		args = append(args, "--log-bin="+s.LogBase, "--binlog-format=ROW", "--binlog-row-image=FULL",
			"--binlog-row-metadata=FULL")
	}
	args = append(args, opts.Args...)
	s.cmd = exec.Command(mariadbd, args...)
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	s.DSN = (&mysql.Config{User: "root", Net: "tcp", Addr: "127.0.0.1:" + strconv.Itoa(port),
		AllowNativePasswords: true}).FormatDSN()
	if err := s.waitReady(filepath.Join(dir, "error.log")); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady(errLog string) error {
	deadline := time.Now().Add(30 * time.Second)
	db, err := sql.Open("mysql", s.DSN)
	if err != nil {
		return fmt.Errorf("open %s: %w", s.DSN, err)
	}
	defer db.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-s.done:
			s.done <- werr
			log, _ := os.ReadFile(errLog)
			return fmt.Errorf("mariadbd exited before it answered (%v):\n%s", werr, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(errLog)
			return fmt.Errorf("mariadbd did not answer within 30s: %w\n%s", err, log)
		}
	}
}

// Stop shuts the server down with SIGTERM (a clean shutdown that closes the
// last binlog file with a STOP event) and kills it if it takes over 20 s.
// A second call is a no-op.
func (s *Server) Stop() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	cmd := s.cmd
	s.cmd = nil
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal mariadbd: %w", err)
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-s.done
		return errors.New("mariadbd did not stop within 20s; killed")
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

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
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
