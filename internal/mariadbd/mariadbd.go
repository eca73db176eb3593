// Package mariadbd starts a private MariaDB server: the default database
// of a run, and the private servers of the tests. One server is one
// directory of its own in a temporary directory (the data directory with
// the binary log in it, the socket, the pid file, the error log), a free
// loopback port, root without a password over TCP, and the binary log
// switched on the way the witness needs it (ROW format, FULL row image,
// FULL row metadata, a fixed server_id; see witness/doc.go).
//
// The server is started in a process group of its own (a Ctrl-C at the
// terminal reaches the run, which stops the server in its own time, after
// copying the binary log) and, on Linux, with a parent-death signal: a run
// killed outright takes its server with it. The directory such a run
// leaves is removed by the next Start in the same place.
//
// A fresh data directory comes from mariadb-install-db (about 0.5 s) or,
// by default, from a copy of a template data directory kept in the user's
// cache directory (about 0.03 s), made once per server installation.
package mariadbd

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultInstallTimeout bounds mariadb-install-db (about 0.5 s alone;
// seconds on a loaded machine) unless Config.InstallTimeout says otherwise.
const DefaultInstallTimeout = 60 * time.Second

// DefaultServerID is the server_id of a private server unless
// Config.ServerID says otherwise: GTIDs in its binary log are
// "0-1-<sequence>".
const DefaultServerID = 1

// ErrStart wraps every failure to start a private server; the message
// names the cause (programs missing, port taken, a directory that cannot
// be written, the server's own complaint from its error log).
var ErrStart = errors.New("cannot start the private MariaDB server")

// Config configures Start. The zero value is a run's server: a new
// directory in os.TempDir(), a free port, the binary log on, server_id
// DefaultServerID, a data directory copied from the template.
type Config struct {
	// BinDir holds mariadbd and mariadb-install-db (default: see
	// FindBinaries).
	BinDir string
	// Dir is where the server's own directory is created (default
	// os.TempDir(), which honours TMPDIR).
	Dir string
	// Port on 127.0.0.1; 0 picks a free one (and another if it is taken
	// before the server binds it).
	Port int
	// ServerID is the server_id (default DefaultServerID).
	ServerID uint32
	// NoBinlog starts the server without the binary log.
	NoBinlog bool
	// Args are extra server flags, appended last so that they win.
	Args []string
	// StartTimeout bounds the wait for the server to accept a login
	// (default 30 s).
	StartTimeout time.Duration
	// InstallTimeout bounds each run of mariadb-install-db and of
	// mariadbd --version (default DefaultInstallTimeout): a script that
	// never returns is killed, with its process group, and the start
	// fails naming it.
	InstallTimeout time.Duration
	// TemplateDir is the cache directory of template data directories
	// (default: orderflow-audit/ in os.UserCacheDir()). NoTemplate runs
	// mariadb-install-db for every server instead.
	TemplateDir string
	NoTemplate  bool
	// Logger receives what Start chose (template made or reused, port
	// retried); default: discarded.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Dir == "" {
		c.Dir = os.TempDir()
	}
	if c.ServerID == 0 {
		c.ServerID = DefaultServerID
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.InstallTimeout <= 0 {
		c.InstallTimeout = DefaultInstallTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Server is a running private mariadbd.
type Server struct {
	// Dir is the server's own directory; Remove deletes it.
	Dir string
	// DataDir is the data directory (Dir/data).
	DataDir string
	// LogBase is the --log-bin base name (DataDir/binlog): the binary log
	// files are LogBase.000001, ... Empty without the binary log.
	LogBase  string
	Port     int
	ServerID uint32
	// Binaries are the programs it runs.
	Binaries Binaries

	args    []string // mariadbd's arguments
	errLog  string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error

	mu      sync.Mutex
	removed bool
}

// Start starts a private server and waits until root can log in over TCP.
// Every failure wraps ErrStart, names its cause, and leaves nothing
// behind: no process, no directory. ctx bounds the start (an interrupted
// start cleans up too).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg.setDefaults()
	bins, err := FindBinaries(cfg.BinDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	if cfg.Port != 0 {
		if err := portFree(cfg.Port); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStart, err)
		}
	}
	sweep(cfg.Dir, cfg.Logger)
	root, err := os.MkdirTemp(cfg.Dir, dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("%w: create the server's directory in %s: %v", ErrStart, cfg.Dir, err)
	}
	s := &Server{Dir: root, DataDir: filepath.Join(root, "data"), ServerID: cfg.ServerID, Binaries: bins,
		errLog: filepath.Join(root, "error.log")}
	if !cfg.NoBinlog {
		s.LogBase = filepath.Join(s.DataDir, "binlog")
	}
	if err := s.start(ctx, cfg); err != nil {
		_ = s.Remove()
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	return s, nil
}

// start prepares the directory and runs the server, retrying on another
// free port when one it picked was taken before the server bound it.
func (s *Server) start(ctx context.Context, cfg Config) error {
	if err := writeOwner(s.Dir); err != nil {
		return err
	}
	t0 := time.Now()
	if err := prepareData(ctx, cfg, s.Binaries, s.DataDir); err != nil {
		return err
	}
	cfg.Logger.Debug("data directory ready", "dir", s.DataDir, "took", time.Since(t0))
	for attempt := 1; ; attempt++ {
		port := cfg.Port
		if port == 0 {
			p, err := freePort()
			if err != nil {
				return err
			}
			port = p
		}
		t1 := time.Now()
		err := s.run(ctx, cfg, port)
		if err == nil {
			cfg.Logger.Debug("mariadbd accepts logins", "port", port, "took", time.Since(t1))
		}
		if err == nil || !errors.Is(err, errPortTaken) || cfg.Port != 0 || attempt == 3 {
			return err
		}
		cfg.Logger.Info("port taken before mariadbd bound it; trying another", "port", port)
	}
}

var errPortTaken = errors.New("port taken")

// portFree tells whether 127.0.0.1:port can be bound now.
func portFree(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port 127.0.0.1:%d is taken: %v", port, err)
	}
	return ln.Close()
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// serverArgs are mariadbd's flags: nothing from my.cnf, loopback TCP on
// port, everything in the server's directory (the socket in the data
// directory), the binary log as the
// witness needs it, a small buffer pool and redo log (a run's data is a
// few megabytes; the defaults would make every data directory 100 MB).
func (s *Server) serverArgs(cfg Config, port int) []string {
	args := []string{
		// The socket path is relative to the data directory (where mariadbd
		// works): an absolute one in a deep TMPDIR can exceed the 107 bytes
		// a unix socket path may have. Nothing of ours uses it.
		"--no-defaults", "--datadir=" + s.DataDir, "--socket=mariadbd.sock",
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-name-resolve",
		"--pid-file=" + filepath.Join(s.Dir, "mariadbd.pid"),
		"--server-id=" + strconv.FormatUint(uint64(s.ServerID), 10),
	}
	args = append(args, dataArgs...)
	if s.LogBase != "" {
		args = append(args, "--log-bin="+s.LogBase, "--binlog-format=ROW", "--binlog-row-image=FULL",
			"--binlog-row-metadata=FULL", MaxBinlogSizeArg)
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root") // mariadbd refuses to run as root without it
	}
	return append(args, cfg.Args...)
}

// MaxBinlogSizeArg keeps a binlog file under the bundle gate's 128 MiB
// bound on a witness file (at the default 1 GiB, a long run's witness was
// one file the verifier refused); a transaction is never split.
const MaxBinlogSizeArg = "--max-binlog-size=64M"

// dataArgs size InnoDB for a run; mariadb-install-db gets them too, so
// that the data directory it makes has the redo log the server expects.
var dataArgs = []string{"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M"}

// run starts mariadbd on port and waits until root can log in.
func (s *Server) run(ctx context.Context, cfg Config, port int) error {
	s.Port = port
	s.args = s.serverArgs(cfg, port)
	_ = os.Remove(s.errLog) // a failed attempt's complaints are not this one's
	cmd := exec.Command(s.Binaries.Mariadbd, append(s.args, "--log-error="+s.errLog)...)
	cmd.SysProcAttr = sysProcAttr()
	s.cmd = cmd
	s.exited = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that started the
		// child ends, not the process: keep this goroutine on its thread
		// for as long as the server runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		s.cmd = nil
		return fmt.Errorf("run %s: %w", s.Binaries.Mariadbd, err)
	}
	if err := s.waitReady(ctx, cfg.StartTimeout); err != nil {
		s.kill()
		if tail := s.LogTail(); strings.Contains(tail, "Address already in use") ||
			strings.Contains(tail, "Bind on TCP/IP port") {
			return fmt.Errorf("%w: port 127.0.0.1:%d is taken (mariadbd: %s)", errPortTaken, port, lastError(tail))
		}
		return err
	}
	return nil
}

// waitReady pings until root can log in, the server exits, or the bound
// (or ctx) runs out.
func (s *Server) waitReady(parent context.Context, bound time.Duration) error {
	c := s.Config()
	c.Timeout = time.Second
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(parent, bound)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		err = db.PingContext(pctx)
		if err == nil {
			// The server that answered must be ours: the port was free when
			// it was picked, and another process's server may have bound it
			// before ours did (ours then exits on "Address already in
			// use"). A run on that server would write its witness into
			// another server's binary log.
			err = s.isOurs(pctx, db)
		}
		pcancel()
		if err == nil {
			return nil
		}
		if errors.Is(err, errPortTaken) {
			return err
		}
		select {
		case <-s.exited:
			return fmt.Errorf("mariadbd exited before it accepted a login (%v): %s", s.waitErr, lastError(s.LogTail()))
		case <-ctx.Done():
			if parent.Err() != nil {
				return fmt.Errorf("start interrupted: %w", context.Cause(parent))
			}
			return fmt.Errorf("mariadbd did not accept a login within %v: %v (its error log: %s)", bound, err, lastError(s.LogTail()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// isOurs checks that the server answering on the port has this server's
// data directory; another one is errPortTaken.
func (s *Server) isOurs(ctx context.Context, db *sql.DB) error {
	var dir string
	if err := db.QueryRowContext(ctx, "SELECT @@datadir").Scan(&dir); err != nil {
		return err
	}
	if sameDir(dir, s.DataDir) {
		return nil
	}
	return fmt.Errorf("%w: another server (data directory %s) answers there", errPortTaken, dir)
}

// sameDir compares two directory paths once cleaned and resolved.
func sameDir(a, b string) bool {
	clean := func(p string) string {
		p = filepath.Clean(p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	return clean(a) == clean(b)
}

// lastError picks the server's complaint from the end of its error log:
// its last [ERROR] lines but the final "Aborting" (at most three), else
// the last line. The log itself is deleted with the server's directory.
func lastError(tail string) string {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	var errs []string
	for _, l := range lines {
		if i := strings.Index(l, "[ERROR]"); i >= 0 {
			if msg := strings.TrimSpace(l[i+len("[ERROR]"):]); msg != "Aborting" {
				errs = append(errs, msg)
			}
		}
	}
	switch {
	case len(errs) > 3:
		return strings.Join(errs[len(errs)-3:], "; ")
	case len(errs) > 0:
		return strings.Join(errs, "; ")
	case len(lines) == 0 || lines[len(lines)-1] == "":
		return "its error log is empty"
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// LogTail returns the last 4 KB of the server's error log.
func (s *Server) LogTail() string {
	b, _ := os.ReadFile(s.errLog)
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// Config returns the connection config: root without a password over TCP,
// no database.
func (s *Server) Config() *mysql.Config {
	c := mysql.NewConfig()
	c.User = "root"
	c.Net = "tcp"
	c.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	return c
}

// DSN is the DSN of Config.
func (s *Server) DSN() string { return s.Config().FormatDSN() }

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Signal sends sig to the server (SIGSTOP and SIGCONT pause and resume it).
func (s *Server) Signal(sig os.Signal) error { return s.cmd.Process.Signal(sig) }

// Exited is closed when the server process has ended.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Kill ends the server with SIGKILL (a crash) and waits for it.
func (s *Server) Kill() { s.kill() }

func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// Stop shuts the server down cleanly (SIGTERM: the last binary log file
// gets its STOP event) and waits up to timeout for it, then kills it. It
// returns an error when it had to kill.
func (s *Server) Stop(timeout time.Duration) error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot stop
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(timeout):
		s.kill()
		return fmt.Errorf("mariadbd (pid %d) did not shut down within %v; killed", s.cmd.Process.Pid, timeout)
	}
}

// Remove kills the server and deletes its directory. It is what a run
// does at its end: the binary log was copied before, and a clean shutdown
// right after a run takes 1.5-2 s for data about to be deleted anyway.
// Calling it again is a no-op.
func (s *Server) Remove() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed {
		return nil
	}
	s.kill()
	s.removed = true
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("remove the private server's directory: %w", err)
	}
	return nil
}

// Keep shuts the server down cleanly (bounded by timeout), marks its
// directory as kept (Start's sweep leaves it alone) and returns the one
// shell command that starts a server on the kept data directory, on the
// same port, with the same flags.
func (s *Server) Keep(timeout time.Duration) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.WriteFile(filepath.Join(s.Dir, keptFile), []byte("kept by orderflow-audit run --keep\n"), 0o644); err != nil {
		return "", fmt.Errorf("mark %s as kept: %w", s.Dir, err)
	}
	s.removed = true // never by Remove now
	err := s.Stop(timeout)
	return s.Command(), err
}

// Command is the shell command that starts mariadbd on this server's
// directory with its flags (its error log on the terminal).
func (s *Server) Command() string {
	parts := []string{shellQuote(s.Binaries.Mariadbd)}
	for _, a := range s.args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=./:,+@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
