// Package infra connects to the infrastructure a run needs: a MySQL-family
// server with one scratch database per scenario, and a Kafka cluster
// (embedded kfake by default, or an external one).
package infra

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/migrations"
)

// Defaults and environment variables, in the order they are consulted:
// flag, then environment, then default.
const (
	EnvMySQLDSN     = "ORDERFLOW_MYSQL_DSN"
	DefaultMySQLDSN = "root@tcp(127.0.0.1:3306)/"
)

// Bounds of the calls that must end even when a server stopped answering.
const (
	// ConnectTimeout bounds the first login (ping) when the DSN sets no
	// timeout of its own; a DSN's timeout=... bounds it instead.
	ConnectTimeout = 5 * time.Second
	// CleanupTimeout bounds each cleanup step (dropping a scratch
	// database, deleting a topic) once the work it cleans up after ended,
	// whatever ended it (Ctrl-C included).
	CleanupTimeout = 5 * time.Second
	// ProbeTimeout bounds one liveness probe of the server or the broker.
	ProbeTimeout = 2 * time.Second
)

// CleanupContext returns a context for cleanup after ctx ended or was
// cancelled: not cancelled with ctx (so that Ctrl-C still cleans up) but
// bounded by CleanupTimeout (so that a hung server cannot hang the cleanup).
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
}

// Sentinel errors. ErrUnavailable wraps every failure to reach the server or
// the broker, so that the CLI can map it to exit code 3.
var (
	ErrUnavailable = errors.New("infrastructure unavailable")
	ErrNotOurs     = errors.New("database does not carry the orderflow-audit marker")
	ErrBadName     = errors.New("scratch database name must match ofa_[a-z0-9_]+")
)

// StartHint tells a user how to bring MariaDB up on this kind of machine.
const StartHint = "start MariaDB with `start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd` " +
	"or run scripts/ensure-mariadb.sh (installs it with apt-get if missing)"

// ResolveDSN returns the DSN from the flag, else the environment, else the
// default, parsed by mysql.ParseDSN.
func ResolveDSN(flagValue string) (*mysql.Config, error) {
	dsn := flagValue
	if dsn == "" {
		dsn = os.Getenv(EnvMySQLDSN)
	}
	if dsn == "" {
		dsn = DefaultMySQLDSN
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse MySQL DSN %s: %w", RedactDSN(dsn), err)
	}
	return cfg, nil
}

// ExternalDSN returns the DSN of an external server from the flag, else
// the environment, parsed by mysql.ParseDSN; nil when neither is set: a
// run then starts a private server of its own (internal/mariadbd).
func ExternalDSN(flagValue string) (*mysql.Config, error) {
	if flagValue == "" && os.Getenv(EnvMySQLDSN) == "" {
		return nil, nil
	}
	return ResolveDSN(flagValue)
}

// Redact returns the DSN of cfg with the password replaced by "xxxxx".
func Redact(cfg *mysql.Config) string {
	c := cfg.Clone()
	if c.Passwd != "" {
		c.Passwd = "xxxxx"
	}
	return c.FormatDSN()
}

var passwdRE = regexp.MustCompile(`^([^:@/]*):([^@]*)@`)

// RedactDSN redacts the password of a DSN string, parsed or not.
func RedactDSN(dsn string) string {
	if cfg, err := mysql.ParseDSN(dsn); err == nil {
		return Redact(cfg)
	}
	return passwdRE.ReplaceAllString(dsn, "$1:xxxxx@")
}

// ServerInfo is what a run records about the database server.
type ServerInfo struct {
	Flavour   string // "MariaDB" or "MySQL"
	Version   string // as reported by VERSION()
	Isolation string // default transaction isolation level
}

// Server is a connection to the server without a default database, used to
// create and drop scratch databases.
type Server struct {
	cfg  *mysql.Config // what our connections use
	user *mysql.Config // what the user gave, for Redacted
	db   *sql.DB
	Info ServerInfo
}

// baseConfig returns a copy of cfg with the options every connection of ours
// needs: parsed times, a dial timeout, no database.
func baseConfig(cfg *mysql.Config) *mysql.Config {
	c := cfg.Clone()
	c.ParseTime = true
	c.Loc = time.UTC
	if c.Timeout == 0 {
		c.Timeout = 3 * time.Second
	}
	if c.Params == nil {
		c.Params = map[string]string{}
	}
	c.Params["time_zone"] = "'+00:00'"
	return c
}

// Connect opens and pings the server. Any failure wraps ErrUnavailable and
// names the DSN with its password redacted.
func Connect(ctx context.Context, cfg *mysql.Config) (*Server, error) {
	c := baseConfig(cfg)
	c.DBName = ""
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", ErrUnavailable, Redact(cfg), err)
	}
	// The driver's timeout=... bounds only the TCP dial; a server that
	// accepts the connection and never answers (stopped) would hold the
	// handshake. The login as a whole gets the DSN's timeout when it has
	// one, else ConnectTimeout.
	bound := ConnectTimeout
	if cfg.Timeout > 0 {
		bound = cfg.Timeout
	}
	pctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1045 {
			return nil, fmt.Errorf("%w: MySQL/MariaDB at %s refused the login: %v; check the user and password of the DSN",
				ErrUnavailable, Redact(cfg), redactErr(err, cfg))
		}
		return nil, fmt.Errorf("%w: MySQL/MariaDB at %s is unreachable: %v; %s",
			ErrUnavailable, Redact(cfg), redactErr(err, cfg), StartHint)
	}
	info, err := serverInfo(pctx, db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, Redact(cfg), err)
	}
	return &Server{cfg: c, user: cfg.Clone(), db: db, Info: info}, nil
}

func redactErr(err error, cfg *mysql.Config) string {
	s := err.Error()
	if cfg.Passwd != "" {
		s = strings.ReplaceAll(s, cfg.Passwd, "xxxxx")
	}
	return s
}

// serverInfo detects flavour, version and isolation. MariaDB names the
// isolation variable @@tx_isolation; MySQL 8 only @@transaction_isolation.
func serverInfo(ctx context.Context, db *sql.DB) (ServerInfo, error) {
	var info ServerInfo
	if err := db.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&info.Version); err != nil {
		return info, fmt.Errorf("read server version: %w", err)
	}
	info.Flavour = FlavourOf(info.Version)
	q := `SELECT @@transaction_isolation`
	if info.Flavour == "MariaDB" {
		q = `SELECT @@tx_isolation`
	}
	if err := db.QueryRowContext(ctx, q).Scan(&info.Isolation); err != nil {
		return info, fmt.Errorf("read isolation level: %w", err)
	}
	return info, nil
}

// FlavourOf tells MariaDB from MySQL by the version string.
func FlavourOf(version string) string {
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return "MariaDB"
	}
	return "MySQL"
}

// DB returns the server-level pool (no default database).
func (s *Server) DB() *sql.DB { return s.db }

// Redacted returns the DSN the user gave (not the options this package
// adds to it) with the password redacted.
func (s *Server) Redacted() string { return Redact(s.user) }

// Close closes the server-level pool.
func (s *Server) Close() error { return s.db.Close() }

// Probe tells whether the server still answers: a ping bounded by
// ProbeTimeout (the DSN's readTimeout, if shorter, applies too). A failure
// wraps ErrUnavailable and names the server, password redacted.
func (s *Server) Probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ProbeTimeout)
	defer cancel()
	if err := s.db.PingContext(pctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return unavailablef("MySQL/MariaDB at %s stopped answering (no reply within %v)", s.Redacted(), ProbeTimeout)
		}
		return unavailablef("MySQL/MariaDB at %s is unreachable: %v", s.Redacted(), redactErr(err, s.user))
	}
	return nil
}

// RedactErr returns err's message with the password of the server's DSN
// replaced, in case a library echoed it.
func (s *Server) RedactErr(err error) string { return redactErr(err, s.user) }

// Unavailable wraps err with ErrUnavailable (exit code 3) without adding
// to its message.
func Unavailable(err error) error { return &unavailable{err} }

// unavailablef returns an error wrapping ErrUnavailable whose message is
// the formatted text alone.
func unavailablef(format string, args ...any) error {
	return &unavailable{fmt.Errorf(format, args...)}
}

type unavailable struct{ err error }

func (e *unavailable) Error() string   { return e.err.Error() }
func (e *unavailable) Unwrap() []error { return []error{e.err, ErrUnavailable} }

// DSNFor returns a DSN for database name on this server, for a child actor
// process. It carries the password: never print it, print Redact instead.
func (s *Server) DSNFor(name string) string {
	c := s.cfg.Clone()
	c.DBName = name
	return c.FormatDSN()
}

// ConfigFor returns the connection config for database name.
func (s *Server) ConfigFor(name string) *mysql.Config {
	c := s.cfg.Clone()
	c.DBName = name
	return c
}

// Scratch is one scratch database, created and migrated for a scenario.
type Scratch struct {
	Name   string
	DB     *sql.DB
	server *Server
}

var scratchRE = regexp.MustCompile(`^ofa_[a-z0-9_]+$`)

// ScratchName is evidence.ScratchName: the verifier derives the same
// name from the evidence alone.
func ScratchName(parts ...string) string { return evidence.ScratchName(parts...) }

// CreateScratch creates database name, marks it as ours and applies the
// migrations. A failure after CREATE DATABASE drops it again, unless ctx
// was cancelled (the caller gave up on the server: the error then says
// that the database may be left, and where).
//
// CREATE DATABASE is not cancellable on the server: a statement cut off by
// ctx may still complete there. A caller that wants Ctrl-C to let a
// creation finish passes a ctx that Ctrl-C does not cancel (the runner
// does: creating and migrating take milliseconds). A stopped server must
// not hold the creation: CREATE DATABASE is bounded by CleanupTimeout.
func (s *Server) CreateScratch(ctx context.Context, name, runID string) (*Scratch, error) {
	if !scratchRE.MatchString(name) || len(name) > 64 {
		return nil, fmt.Errorf("create %q: %w", name, ErrBadName)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, CleanupTimeout)
	defer cancel()
	if _, err := s.db.ExecContext(cctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1007 { // it exists, and is not ours
			return nil, fmt.Errorf("create database %s: %w", name, err)
		}
		// Cut off: it may exist now, without the marker. The name holds
		// our run id, so nobody else made it.
		return nil, fmt.Errorf("create database %s: %w", name, s.dropHalfMade(ctx, name, err))
	}
	db, err := sql.Open("mysql", s.ConfigFor(name).FormatDSN())
	if err == nil {
		err = migrate(ctx, db, runID)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, fmt.Errorf("prepare scratch database %s: %w", name, s.dropHalfMade(ctx, name, err))
	}
	return &Scratch{Name: name, DB: db, server: s}, nil
}

// migrate applies the migrations to a new scratch database, marking it as
// ours first: the marker's migration, its row, then the rest. A run killed
// while migrating then leaves a database that Leftovers finds.
func migrate(ctx context.Context, db *sql.DB, runID string) error {
	ms, err := migrations.All()
	if err != nil {
		return err
	}
	if len(ms) == 0 || ms[0].Name != "marker" {
		return errors.New("migrations: the first one must create ofa_marker")
	}
	if _, err := migrations.ApplyList(ctx, db, ms[:1]); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx,
		`INSERT INTO ofa_marker (id, tool, run_id) VALUES (1, 'orderflow-audit', ?)`, runID); err != nil {
		return fmt.Errorf("mark database: %w", err)
	}
	_, err = migrations.ApplyList(ctx, db, ms)
	return err
}

// dropHalfMade drops database name, which CreateScratch may have created
// before err, without the marker check (it may not have one yet), bounded
// by CleanupTimeout; it returns err, saying so when the database may be
// left behind. When ctx was cancelled (the caller gave up on the server)
// or the server did not answer within CleanupTimeout while ctx was still
// running, it does not wait on the server again.
func (s *Server) dropHalfMade(ctx context.Context, name string, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) || (ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%w (%s may be left on the server without our marker: drop it by hand if so)", err, name)
	}
	dctx, cancel := CleanupContext(ctx)
	defer cancel()
	if _, derr := s.db.ExecContext(dctx, "DROP DATABASE IF EXISTS `"+name+"`"); derr != nil {
		return fmt.Errorf("%w (and dropping %s again failed, so it may be left on the server without our marker: %v)", err, name, derr)
	}
	return err
}

// Drop closes the pool and drops the database, but only if it carries our
// marker.
func (sc *Scratch) Drop(ctx context.Context) error {
	if sc.DB != nil {
		sc.DB.Close()
	}
	return sc.server.DropScratch(ctx, sc.Name)
}

// DropScratch drops database name if, and only if, its name is a scratch
// name and it carries the orderflow-audit marker.
func (s *Server) DropScratch(ctx context.Context, name string) error {
	if !scratchRE.MatchString(name) {
		return fmt.Errorf("drop %q: %w", name, ErrBadName)
	}
	var tool string
	err := s.db.QueryRowContext(ctx, "SELECT tool FROM `"+name+"`.ofa_marker WHERE id = 1").Scan(&tool)
	if err != nil || tool != "orderflow-audit" {
		return fmt.Errorf("drop %s: %w", name, ErrNotOurs)
	}
	if _, err := s.db.ExecContext(ctx, "DROP DATABASE `"+name+"`"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}
