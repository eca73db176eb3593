package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/migrations"
	"github.com/orderflow-audit/orderflow-audit/runner/chaos"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// Where the bundle keeps what the audit captured, beneath its directory
// (audit/ beside audit.json), as evidence/audit reads it.
const (
	witnessDBDir    = "witness/db"
	witnessKafkaDir = "witness/kafka"
	// witnessKafkaDump: the user's broker's record of the topic.
	witnessKafkaDump = "witness/kafka.jsonl"
	rolesDir         = "roles"
	clientFile       = "client.jsonl"
	profileFile      = "profile.yaml"
	nemesisFile      = "nemesis.jsonl"
)

// topicPartitions is how many partitions the audit creates the topic
// with on the embedded broker: more than one, so that a relay that does
// not key by aggregate can split an aggregate (aggregate-split, order).
const topicPartitions = 3

// scope is what one audit holds from setUp to close: the private server
// (or a connection to the user's), the pipeline's database, the broker,
// the proxies, the staging directory. close releases all of it, whatever
// happened.
type scope struct {
	opts    *Options
	runID   string
	private *mariadbd.Server // nil on the user's own server
	cfg     *mysql.Config    // how to reach the server (the private one's, or the profile's DSN)
	server  *infra.Server
	db      *sql.DB // the pipeline's database, for the settle check
	dbName  string
	kafka   *infra.Kafka
	proxies *chaos.Proxies
	// stageRoot is the staging directory beside the output; stage is the
	// bundle's directory in it (<stageRoot>/audit).
	stageRoot, stage, base string
	settings               binlog.Settings
	start                  binlog.Position
	brokerClosed           bool
	// startOffsets are the topic's end offsets when the run window
	// started (zeros on a topic the audit created).
	startOffsets []evidence.PartitionOffset
	// own: the database is on the user's server (database.dsn); dropDB:
	// the audit created the database there and drops it at the end;
	// dropTopic: the audit created the topic on the user's broker.
	own, dropDB, dropTopic bool
	// rotateAt is where keepBinlogFilesSmall closes a file of the user's
	// server (0: binlog.RotateFileBytes; the tests make it small).
	rotateAt int64
}

// setUp starts the private server (binlog on), records where the binlog
// stands (the run window starts there), creates the pipeline's database
// with the profile's migrations, the staging directory, the embedded
// broker persisting into it and the topic. On error everything it
// took is released.
func setUp(ctx context.Context, opts *Options, runID string) (_ *scope, err error) {
	s := &scope{opts: opts, runID: runID, proxies: chaos.NewProxies(), base: bundleBase(opts.Out)}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if opts.Profile.Database.DSN != "" {
		err = s.connectOwn(ctx)
	} else {
		err = s.startPrivate(ctx)
	}
	if err != nil {
		return nil, err
	}
	sweepStages(filepath.Dir(opts.Out))
	if s.stageRoot, err = os.MkdirTemp(filepath.Dir(opts.Out), stagePrefix); err != nil {
		return nil, fmt.Errorf("%w: create the staging directory beside %s: %v", ErrBadOptions, opts.Out, err)
	}
	if err = os.WriteFile(filepath.Join(s.stageRoot, stageOwner), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, fmt.Errorf("%w: write into the staging directory %s: %v", ErrBadOptions, s.stageRoot, err)
	}
	s.stage = filepath.Join(s.stageRoot, s.base)
	if err = os.MkdirAll(filepath.Join(s.stage, rolesDir), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", s.stage, err)
	}
	if err = s.startBroker(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// startPrivate starts the private server (binlog on), records where the
// binlog stands and creates the pipeline's database.
func (s *scope) startPrivate(ctx context.Context) (err error) {
	opts := s.opts
	private := opts.Private
	private.Args = append(append([]string{}, private.Args...), opts.Profile.Database.ServerOptions.Args()...)
	if s.private, err = mariadbd.Start(ctx, private); err != nil {
		return infra.Unavailable(err)
	}
	s.cfg = s.private.Config()
	fmt.Fprintf(opts.Progress, "private MariaDB server on 127.0.0.1:%d (%s)\n", s.private.Port, s.private.Dir)
	if s.server, err = infra.Connect(ctx, s.cfg); err != nil {
		return err
	}
	if s.settings, err = binlog.Check(ctx, s.server.DB()); err != nil {
		return infra.Unavailable(fmt.Errorf("preflight: the server's binary log cannot witness the audit: %w", err))
	}
	// The window starts before the database is created, so that it holds
	// every table whole, from its CREATE TABLE on: the invariants rule can
	// then rule on them instead of saying a partner row may predate it.
	if s.start, err = binlog.CurrentPosition(ctx, s.server.DB()); err != nil {
		return infra.Unavailable(fmt.Errorf("preflight: %w", err))
	}
	return s.createDatabase(ctx)
}

// startBroker starts the embedded broker persisting into the bundle and
// creates the topic, or reaches the profile's external broker
// (startExternalBroker).
func (s *scope) startBroker(ctx context.Context) (err error) {
	if s.opts.Profile.Broker.Mode == profile.BrokerExternal {
		return s.startExternalBroker(ctx)
	}
	if s.kafka, err = infra.StartKafka(ctx, infra.KafkaConfig{DataDir: filepath.Join(s.stage, witnessKafkaDir)}); err != nil {
		return err
	}
	if err = s.kafka.CreateTopic(ctx, s.opts.Profile.Topic.Name, topicPartitions); err != nil {
		return infra.Unavailable(err)
	}
	s.startOffsets = make([]evidence.PartitionOffset, topicPartitions)
	for i := range s.startOffsets {
		s.startOffsets[i] = evidence.PartitionOffset{Partition: int32(i), Offset: 0}
	}
	return nil
}

// createDatabase creates the pipeline's database (the profile's
// database.schema, or ofa_<run>_audit), applies the profile's migrations
// in the order of their globs (each glob's files sorted by name) and marks
// it as the tool's (ofa_marker, which the reference's actors require).
func (s *scope) createDatabase(ctx context.Context) error {
	s.dbName = s.opts.Profile.Database.Schema
	if s.dbName == "" {
		s.dbName = infra.ScratchName(s.runID, "audit")
	}
	files, err := migrationFiles(s.opts.ProfileDir, s.opts.Profile.Database.Migrations)
	if err != nil {
		return err
	}
	if _, err := s.server.DB().ExecContext(ctx, "CREATE DATABASE `"+s.dbName+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		return infra.Unavailable(fmt.Errorf("create database %s: %w", s.dbName, err))
	}
	s.dropDB = s.own
	if s.db, err = sql.Open("mysql", s.server.DSNFor(s.dbName)); err != nil {
		return infra.Unavailable(fmt.Errorf("open database %s: %w", s.dbName, err))
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("%w: read migration %s: %v", ErrBadOptions, f, err)
		}
		for i, stmt := range migrations.SplitStatements(string(body)) {
			if _, err := s.db.ExecContext(ctx, stmt); err != nil {
				if s.own && accessDenied(err) {
					return privilegesErr(fmt.Sprintf("the account may not run migration %s, statement %d: %v; grant what it needs on %s",
						f, i+1, s.server.RedactErr(err), s.dbName))
				}
				return fmt.Errorf("%w: migration %s, statement %d: %v", ErrBadOptions, f, i+1, err)
			}
		}
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS ofa_marker (id TINYINT NOT NULL PRIMARY KEY,
		tool VARCHAR(64) NOT NULL, run_id VARCHAR(64) NOT NULL, created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))`); err != nil {
		return infra.Unavailable(fmt.Errorf("mark database %s: %w", s.dbName, err))
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO ofa_marker (id, tool, run_id) VALUES (1, 'orderflow-audit', ?)`, s.runID); err != nil {
		return infra.Unavailable(fmt.Errorf("mark database %s: %w", s.dbName, err))
	}
	return nil
}

// A staging directory is named stagePrefix* and holds, beside the staged
// bundle, the pid of the audit that made it (stageOwner): an audit killed
// outright (SIGKILL) leaves its staging directory, which the next audit
// writing beside it removes once that pid is gone.
const (
	stagePrefix = ".audit-stage-"
	stageOwner  = "owner.pid"
)

// sweepStages removes the staging directories in dir whose audit no
// longer runs.
func sweepStages(dir string) {
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stagePrefix) {
			continue
		}
		root := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(filepath.Join(root, stageOwner))
		if err != nil {
			continue // not one of ours, or being made
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && !alive(pid) {
			os.RemoveAll(root)
		}
	}
}

// migrationFiles expands the profile's migration globs, relative to the
// profile's directory. A glob that matches nothing is an error: a typo
// would otherwise audit a pipeline without its tables.
func migrationFiles(dir string, globs []string) ([]string, error) {
	var out []string
	for _, g := range globs {
		if !filepath.IsAbs(g) {
			g = filepath.Join(dir, g)
		}
		m, err := filepath.Glob(g)
		if err != nil {
			return nil, fmt.Errorf("%w: database.migrations %q: %v", ErrBadOptions, g, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%w: database.migrations %q matches no file (globs are relative to the profile's directory)", ErrBadOptions, g)
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	return out, nil
}

// dsn is a DSN of the pipeline's database at addr (the server, or a
// proxy in front of it).
func (s *scope) dsn(addr string) string {
	return s.roleDSN(addr, "")
}

// roleDSN is dsn as account user (no password: the private server
// listens on 127.0.0.1 only); user empty: the scope's own account.
func (s *scope) roleDSN(addr, user string) string {
	cfg := s.cfg.Clone()
	cfg.Addr = addr
	cfg.DBName = s.dbName
	if user != "" {
		cfg.User, cfg.Passwd = user, ""
	}
	return cfg.FormatDSN()
}

// roleUser is the account of replica name ("relay-1") on the private
// server: conn-kill finds the replica's connections by it.
func roleUser(name string) string {
	u := "ofa_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '_'
	}, name)
	return u[:min(len(u), 80)] // MariaDB's longest user name
}

// createRoleUser gives replica name an account of its own on the private
// server, with every privilege root has there but granting: a role runs
// as before, and its connections are told apart from everyone else's by
// their user (conn-kill).
func (s *scope) createRoleUser(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := roleUser(name)
	for _, host := range []string{"%", "localhost"} {
		for _, q := range []string{"CREATE USER IF NOT EXISTS '" + u + "'@'" + host + "'", "GRANT ALL PRIVILEGES ON *.* TO '" + u + "'@'" + host + "'"} {
			if _, err := s.server.DB().ExecContext(ctx, q); err != nil {
				return "", infra.Unavailable(fmt.Errorf("role %s: its account on the private server: %s: %w", name, q, err))
			}
		}
	}
	return u, nil
}

// closeBroker shuts the embedded broker down once, so that its data
// directory is complete.
func (s *scope) closeBroker() error {
	if s.kafka == nil || s.brokerClosed {
		return nil
	}
	s.brokerClosed = true
	return s.kafka.Shutdown()
}

// close releases everything setUp took, each step bounded: the proxies,
// the broker, the staging directory (gone once promoted), the
// connections and the private server (removed, or with Keep shut down
// cleanly and kept).
func (s *scope) close() {
	s.proxies.Close()
	if s.kafka != nil {
		s.kafka.Close()
	}
	if s.stageRoot != "" {
		os.RemoveAll(s.stageRoot)
	}
	if s.db != nil {
		s.db.Close()
	}
	s.closeOwn()
	if s.server != nil {
		s.server.Close()
	}
	if s.private == nil {
		return
	}
	if !s.opts.Keep {
		if err := s.private.Remove(); err != nil {
			fmt.Fprintf(s.opts.Progress, "private server: %v\n", err)
		}
		return
	}
	command, err := s.private.Keep(keepTimeout)
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(s.opts.Progress, "private server: %v\n", err)
	}
	fmt.Fprintf(s.opts.Progress, "kept the private server's data directory %s (database %s); start a server on it with:\n  %s\n",
		s.private.DataDir, s.dbName, command)
}
