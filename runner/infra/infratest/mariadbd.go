package infratest

import (
	"bytes"
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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDBOptions configure StartMariaDB. The zero value is a fresh data
// directory under t.TempDir, a free loopback port and no extra flags.
type MariaDBOptions struct {
	// DataDir is the data directory; it is initialised with
	// mariadb-install-db when it holds no "mysql" directory yet. Default:
	// a new directory under t.TempDir.
	DataDir string
	// Port to listen on (127.0.0.1 only). Default: a free port.
	Port int
	// Args are extra server flags, e.g. "--log-bin=binlog",
	// "--binlog-format=ROW", "--server-id=1".
	Args []string
	// StartTimeout bounds the wait for the server to accept a login
	// (default 30 s).
	StartTimeout time.Duration
}

// MariaDB is a private mariadbd started by a test: its own data
// directory, socket and port, root with an empty password. Unlike the
// shared server of Server, a test may stop, kill or pause it. t.Cleanup
// resumes it if paused, kills it and waits for it.
type MariaDB struct {
	DataDir string
	Socket  string
	Port    int

	t       testing.TB
	cmd     *exec.Cmd
	log     string
	mu      sync.Mutex
	paused  bool
	exited  chan struct{}
	waitErr error
}

// Paths of the MariaDB programs; PATH is searched first.
var (
	installDBPaths = []string{"mariadb-install-db", "/usr/bin/mariadb-install-db", "/usr/local/bin/mariadb-install-db"}
	mariadbdPaths  = []string{"mariadbd", "/usr/sbin/mariadbd", "/usr/local/sbin/mariadbd", "/usr/libexec/mariadbd"}
)

func findProgram(candidates []string) (string, error) {
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found (looked for %v)", filepath.Base(candidates[0]), candidates)
}

// StartMariaDB initialises (when needed) and starts a private mariadbd for
// this test. Without mariadb-install-db or mariadbd the test fails when CI
// is set and is skipped otherwise; -short skips it.
func StartMariaDB(t testing.TB, opts MariaDBOptions) *MariaDB {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts a private mariadbd (skipped with -short)")
	}
	installDB, err1 := findProgram(installDBPaths)
	mariadbd, err2 := findProgram(mariadbdPaths)
	if err := errors.Join(err1, err2); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and a private MariaDB server cannot be started: %v (scripts/ensure-mariadb.sh installs mariadb-server)", err)
		}
		t.Skipf("private MariaDB server unavailable (set CI to make this fail): %v", err)
	}
	dir := t.TempDir()
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(dir, "data")
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if _, err := os.Stat(filepath.Join(opts.DataDir, "mysql")); err != nil {
		initDataDir(t, installDB, opts.DataDir, dir)
	}
	m := &MariaDB{DataDir: opts.DataDir, Socket: filepath.Join(dir, "mysqld.sock"), log: filepath.Join(dir, "mariadbd.err"), t: t}
	// A free port found by listening can be taken before the server binds
	// it: try a few.
	for attempt := 0; ; attempt++ {
		m.Port = opts.Port
		if m.Port == 0 {
			m.Port = freePort(t)
		}
		err := m.start(mariadbd, opts)
		if err == nil {
			break
		}
		if opts.Port != 0 || attempt == 2 {
			t.Fatalf("start private mariadbd: %v", err)
		}
	}
	t.Cleanup(m.cleanup)
	return m
}

func initDataDir(t testing.TB, installDB, dataDir, logDir string) {
	t.Helper()
	args := []string{"--no-defaults", "--datadir=" + dataDir, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(installDB, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		_ = os.WriteFile(filepath.Join(logDir, "install-db.log"), out, 0o644)
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start runs mariadbd and waits until root can log in over TCP.
func (m *MariaDB) start(mariadbd string, opts MariaDBOptions) error {
	args := []string{
		"--no-defaults", "--datadir=" + m.DataDir, "--socket=" + m.Socket,
		"--port=" + strconv.Itoa(m.Port), "--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(filepath.Dir(m.Socket), "mariadbd.pid"),
		"--log-error=" + m.log,
		"--innodb-buffer-pool-size=32M", "--skip-innodb-doublewrite",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	args = append(args, opts.Args...)
	m.cmd = exec.Command(mariadbd, args...)
	// Its own process group, so that a test's signals reach only it.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := m.cmd.Start(); err != nil {
		return err
	}
	m.exited = make(chan struct{})
	go func() {
		m.waitErr = m.cmd.Wait()
		close(m.exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	db, err := sql.Open("mysql", m.DSN())
	if err != nil {
		m.Kill()
		return err
	}
	defer db.Close()
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		err = db.PingContext(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-m.exited:
			return fmt.Errorf("mariadbd exited (%v) before accepting logins; its log %s:\n%s", m.waitErr, m.log, m.logTail())
		case <-ctx.Done():
			m.Kill()
			return fmt.Errorf("mariadbd did not accept a login within %v: %v; its log:\n%s", opts.StartTimeout, err, m.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (m *MariaDB) logTail() string {
	b, _ := os.ReadFile(m.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Config returns the connection config: root, no password, TCP.
func (m *MariaDB) Config() *mysql.Config {
	c := mysql.NewConfig()
	c.User = "root"
	c.Net = "tcp"
	c.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(m.Port))
	return c
}

// DSN returns the DSN of Config, without a database.
func (m *MariaDB) DSN() string { return m.Config().FormatDSN() }

// Pid returns the server's process id.
func (m *MariaDB) Pid() int { return m.cmd.Process.Pid }

// Pause stops the server with SIGSTOP: it keeps its connections open and
// answers nothing, like a hung server. It returns once every thread of the
// server is stopped (kill(2) returns before that: a busy thread could
// still answer one more request).
func (m *MariaDB) Pause() {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
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
	if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		m.t.Fatalf("SIGCONT mariadbd: %v", err)
	}
	m.paused = false
}

// Kill ends the server with SIGKILL (a crash) and waits for it.
func (m *MariaDB) Kill() {
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
}

// Stop shuts the server down cleanly (SIGTERM) and waits up to 30 s,
// then kills it.
func (m *MariaDB) Stop() {
	m.mu.Lock()
	if m.paused {
		_ = m.cmd.Process.Signal(syscall.SIGCONT)
		m.paused = false
	}
	m.mu.Unlock()
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		m.Kill()
	}
}

// Exited tells whether the server process has ended.
func (m *MariaDB) Exited() bool {
	select {
	case <-m.exited:
		return true
	default:
		return false
	}
}

func (m *MariaDB) cleanup() {
	m.mu.Lock()
	if m.paused {
		_ = m.cmd.Process.Signal(syscall.SIGCONT)
	}
	m.mu.Unlock()
	m.Kill()
}
