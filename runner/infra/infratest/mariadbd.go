package infratest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
)

// MariaDBOptions configure StartMariaDB. The zero value is what a run
// gets: a fresh data directory, a free loopback port, the binary log on.
type MariaDBOptions struct {
	// Port to listen on (127.0.0.1 only). Default: a free port.
	Port int
	// Args are extra server flags.
	Args []string
	// StartTimeout bounds the wait for the server to accept a login
	// (default 30 s).
	StartTimeout time.Duration
}

// MariaDB is a private mariadbd started by a test (the production private
// server of internal/mariadbd): its own data directory and port, root
// with an empty password. Unlike the shared server of Server, a test may
// stop, kill or pause it. t.Cleanup resumes it if paused, kills it and
// removes its directory.
type MariaDB struct {
	DataDir string
	Port    int

	t      testing.TB
	srv    *mariadbd.Server
	mu     sync.Mutex
	paused bool
}

// RequireMariaDB skips the test with -short, and when the MariaDB server
// programs are missing skips it outside CI and fails it with CI set.
func RequireMariaDB(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts a private mariadbd (skipped with -short)")
	}
	if _, err := mariadbd.FindBinaries(""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and a private MariaDB server cannot be started: %v", err)
		}
		t.Skipf("private MariaDB server unavailable (set CI to make this fail): %v", err)
	}
}

// StartMariaDB starts a private mariadbd for this test (RequireMariaDB
// first).
func StartMariaDB(t testing.TB, opts MariaDBOptions) *MariaDB {
	t.Helper()
	RequireMariaDB(t)
	srv, err := mariadbd.Start(context.Background(), mariadbd.Config{
		Port: opts.Port, Args: opts.Args, StartTimeout: opts.StartTimeout,
	})
	if err != nil {
		t.Fatalf("start private mariadbd: %v", err)
	}
	m := &MariaDB{DataDir: srv.DataDir, Port: srv.Port, t: t, srv: srv}
	t.Cleanup(m.cleanup)
	return m
}

// Server returns the private server itself.
func (m *MariaDB) Server() *mariadbd.Server { return m.srv }

// Config returns the connection config: root, no password, TCP.
func (m *MariaDB) Config() *mysql.Config { return m.srv.Config() }

// DSN returns the DSN of Config, without a database.
func (m *MariaDB) DSN() string { return m.srv.DSN() }

// Pid returns the server's process id.
func (m *MariaDB) Pid() int { return m.srv.Pid() }

// Pause stops the server with SIGSTOP: it keeps its connections open and
// answers nothing, like a hung server. It returns once every thread of the
// server is stopped (kill(2) returns before that: a busy thread could
// still answer one more request).
func (m *MariaDB) Pause() {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.srv.Signal(syscall.SIGSTOP); err != nil {
		m.t.Fatalf("SIGSTOP mariadbd: %v", err)
	}
	m.paused = true
	if runtime.GOOS != "linux" {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); !m.allStopped(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			m.t.Fatalf("mariadbd (pid %d) is not stopped 10 s after SIGSTOP", m.Pid())
		}
	}
}

// allStopped tells whether every thread of the server is in the stopped
// state (T), by /proc.
func (m *MariaDB) allStopped() bool {
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(m.Pid()), "task"))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(m.Pid()), "task", task.Name(), "stat"))
		if err != nil {
			continue // the thread ended
		}
		// pid (comm) state ...: the state follows the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Resume continues a paused server with SIGCONT.
func (m *MariaDB) Resume() {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.srv.Signal(syscall.SIGCONT); err != nil {
		m.t.Fatalf("SIGCONT mariadbd: %v", err)
	}
	m.paused = false
}

// Kill ends the server with SIGKILL (a crash) and waits for it.
func (m *MariaDB) Kill() { m.srv.Kill() }

// Stop shuts the server down cleanly (SIGTERM) and waits up to 30 s,
// then kills it.
func (m *MariaDB) Stop() {
	m.mu.Lock()
	m.paused = false // Stop resumes it first
	m.mu.Unlock()
	_ = m.srv.Stop(30 * time.Second)
}

// Exited tells whether the server process has ended.
func (m *MariaDB) Exited() bool {
	select {
	case <-m.srv.Exited():
		return true
	default:
		return false
	}
}

func (m *MariaDB) cleanup() {
	m.mu.Lock()
	if m.paused {
		_ = m.srv.Signal(syscall.SIGCONT)
	}
	m.mu.Unlock()
	if err := m.srv.Remove(); err != nil {
		m.t.Errorf("remove private mariadbd: %v", err)
	}
}

// ServersIn returns the pids of the mariadbd processes whose command line
// mentions dir (a run's private server lives in a directory there): what a
// test checks is gone once a run ended, however it ended.
func ServersIn(dir string) []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("mariadbd")) && bytes.Contains(b, []byte(dir)) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// NothingLeft fails the test when a private server started in priv is
// still running after a few seconds, or when anything is left in priv.
func NothingLeft(t testing.TB, priv string) {
	t.Helper()
	var pids []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if pids = ServersIn(priv); len(pids) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(pids) > 0 {
		t.Errorf("mariadbd still runs in %s: pid(s) %v", priv, pids)
	}
	es, _ := os.ReadDir(priv)
	for _, e := range es {
		t.Errorf("left in %s: %s", priv, e.Name())
	}
}
