package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// The user's own server and broker (database.dsn, broker: external;
// ../shared/BLACKBOX.md "What the tool does", 1 and 2). The audit then
// starts nothing of them: it checks that the server can witness the run
// (binlog ON, ROW, FULL images and metadata), that the account may do
// what the audit does (stream the binlog, list and close its files,
// create the run's database and apply the migrations), and that the
// broker answers; the run window starts at the server's binlog position
// and the topic's end offsets then. The binlog is streamed over the
// replication protocol and the topic dumped through the Kafka protocol,
// as `run --mysql-dsn --kafka-brokers` does (witness/binlog.Stream,
// witness/broker.Dump).
//
// The database: with database.schema (or a database in the DSN's path)
// the user's database is audited as it is: it must exist, nothing is
// created in it and nothing dropped, and migrations are refused (they
// are for a database the audit creates). Without, the audit creates
// ofa_<run>_audit on the server, applies the migrations, and drops it at
// the end (--keep keeps it).

// connectOwn reaches the user's server, runs the preflight and records
// the window's start. Every failure to reach it or a refusal wraps
// infra.ErrUnavailable (exit 3) and names the cause; a DSN that does not
// parse is a bad profile (exit 2). The password never shows.
func (s *scope) connectOwn(ctx context.Context) (err error) {
	p := s.opts.Profile
	cfg, err := mysql.ParseDSN(p.Database.DSN)
	if err != nil {
		return fmt.Errorf("%w: database.dsn %s: %v", ErrBadOptions, p.Database.Redacted(), profile.Redact(err.Error(), p.Database.DSN))
	}
	if cfg.Net != "tcp" {
		return fmt.Errorf("%w: database.dsn %s: the audit reaches the server over tcp (its proxies and the binlog stream), not %q",
			ErrBadOptions, p.Database.Redacted(), cfg.Net)
	}
	named := p.Database.Schema
	if named == "" {
		named = cfg.DBName
	}
	if named != "" && len(p.Database.Migrations) > 0 {
		return fmt.Errorf("%w: database.migrations with database %s on your own server: the audit applies migrations only to a database it creates; "+
			"leave database.schema (and the DSN's database) out to have it create one per run, or leave the migrations out to audit %s as it is",
			ErrBadOptions, named, named)
	}
	s.own = true
	s.cfg = cfg.Clone()
	s.cfg.DBName = ""
	if s.server, err = infra.Connect(ctx, s.cfg); err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	fmt.Fprintf(s.opts.Progress, "your server %s (%s)\n", s.server.Redacted(), s.server.Info.Version)
	if s.server.Info.Flavour != "MariaDB" {
		return infra.Unavailable(fmt.Errorf("preflight: %s is %s %s: the audit reads MariaDB's binary log only (MySQL's GTID events are not modelled)",
			s.server.Redacted(), s.server.Info.Flavour, s.server.Info.Version))
	}
	if s.settings, err = binlog.Check(ctx, s.server.DB()); err != nil {
		return infra.Unavailable(fmt.Errorf("preflight: the binary log of %s cannot witness the audit: %s",
			s.server.Redacted(), s.server.RedactErr(err)))
	}
	if err = s.checkOwnPrivileges(ctx, named == ""); err != nil {
		return err
	}
	// After the preflight's FLUSH BINARY LOGS: the window starts at the
	// beginning of a fresh file, so little is streamed that is not the run's.
	if s.start, err = binlog.CurrentPosition(ctx, s.server.DB()); err != nil {
		return infra.Unavailable(fmt.Errorf("preflight: %s", s.server.RedactErr(err)))
	}
	if named == "" {
		return s.createDatabase(ctx)
	}
	s.dbName = named
	var found string
	err = s.server.DB().QueryRowContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", named).Scan(&found)
	if errors.Is(err, sql.ErrNoRows) {
		return infra.Unavailable(fmt.Errorf("preflight: database %s is not on %s (or the account may not see it): "+
			"with database.schema the audit uses your database as it is and creates nothing", named, s.server.Redacted()))
	}
	if err != nil {
		return infra.Unavailable(fmt.Errorf("preflight: look for database %s: %s", named, s.server.RedactErr(err)))
	}
	if s.db, err = sql.Open("mysql", s.server.DSNFor(s.dbName)); err != nil {
		return infra.Unavailable(fmt.Errorf("open database %s: %s", s.dbName, s.server.RedactErr(err)))
	}
	return s.checkTables(ctx)
}

// checkTables: in a database used as it is, the account must see every
// table the profile maps (the settle check reads the outbox and the
// progress; the tables must be there for the pipeline to write them).
// A table it cannot read, or one that is not there, ends the audit
// before anything starts, naming the table.
func (s *scope) checkTables(ctx context.Context) error {
	p := s.opts.Profile
	tables := []string{p.Outbox.Table}
	if p.Outbox.Progress.Table != "" {
		tables = append(tables, p.Outbox.Progress.Table)
	}
	if p.Business != nil {
		tables = append(tables, p.Business.Table)
	}
	if p.Inbox != nil {
		tables = append(tables, p.Inbox.Table)
	}
	if p.Effect != nil {
		tables = append(tables, p.Effect.Table)
	}
	for _, t := range tables {
		if _, err := s.db.ExecContext(ctx, "SELECT 1 FROM `"+t+"` LIMIT 0"); err != nil {
			return infra.Unavailable(fmt.Errorf("preflight: table %s.%s, which the profile maps, cannot be read by %s: %s "+
				"(with database.schema the audit needs SELECT on the tables it maps, and creates nothing)", s.dbName, t, s.server.Redacted(), s.server.RedactErr(err)))
		}
	}
	return nil
}

// ownGrant is the grant of what the audit does beyond the run's database.
const ownGrant = "GRANT REPLICATION SLAVE, BINLOG MONITOR, RELOAD ON *.* TO <account>"

// checkOwnPrivileges tries what the audit does on the user's server and
// lists every privilege it lacks: BINLOG MONITOR (REPLICATION CLIENT
// before MariaDB 10.5: SHOW BINARY LOGS, the position), RELOAD (FLUSH
// BINARY LOGS, so that the run's files are closed when streamed),
// REPLICATION SLAVE (the binlog dump, tried from the current file), and,
// when it creates the run's database (create), what the migrations and
// the pipeline do in it (infra.CheckPrivileges, in a database of its own
// that it drops again).
func (s *scope) checkOwnPrivileges(ctx context.Context, create bool) error {
	db := s.server.DB()
	var missing []string
	try := func(privilege, why, stmt string) (ok bool, err error) {
		rows, err := db.QueryContext(ctx, stmt)
		if err == nil {
			rows.Close()
			return true, nil
		}
		if !accessDenied(err) {
			return false, infra.Unavailable(fmt.Errorf("preflight: %s: %s", stmt, s.server.RedactErr(err)))
		}
		missing = append(missing, fmt.Sprintf("%s, for %s (%s: %s)", privilege, why, stmt, s.server.RedactErr(err)))
		return false, nil
	}
	monitor, err := try("BINLOG MONITOR (REPLICATION CLIENT)", "the binlog's position and files", "SHOW BINARY LOGS")
	if err != nil {
		return err
	}
	if _, err := try("RELOAD", "closing the binlog file before it is streamed", "FLUSH BINARY LOGS"); err != nil {
		return err
	}
	file := filepath.Base(s.settings.Basename) + ".000001"
	if monitor {
		if pos, err := binlog.CurrentPosition(ctx, db); err == nil {
			file = pos.File
		}
	}
	if err := binlog.ProbeDump(ctx, binlog.StreamConfig{DSN: s.cfg.FormatDSN(), Logger: s.opts.Logger}, file); err != nil {
		if !errors.Is(err, binlog.ErrServer) {
			return infra.Unavailable(fmt.Errorf("preflight: %s", s.server.RedactErr(err)))
		}
		missing = append(missing, "REPLICATION SLAVE, for streaming the binlog ("+s.server.RedactErr(err)+")")
	}
	var scratch error
	if create {
		scratch = s.server.CheckPrivileges(ctx, infra.ScratchName(s.runID, "pf"), infra.Needs{For: "the run's database, its migrations and the pipeline"})
		if scratch != nil && !errors.Is(scratch, infra.ErrPrivileges) {
			return fmt.Errorf("preflight: %w", scratch)
		}
	}
	if len(missing) == 0 && scratch == nil {
		return nil
	}
	var account string
	_ = db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&account)
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("the account %s at %s lacks %d privilege(s) the audit needs: %s; grant them (%s)",
			account, s.cfg.Addr, len(missing), strings.Join(missing, "; "), ownGrant))
	}
	if scratch != nil {
		parts = append(parts, s.server.RedactErr(scratch))
	}
	return privilegesErr("preflight: " + strings.Join(parts, "; and "))
}

// privilegesErr is an error of msg that wraps infra.ErrPrivileges and
// infra.ErrUnavailable (exit 3) without repeating their text.
func privilegesErr(msg string) error {
	return infra.Unavailable(&privileges{msg})
}

type privileges struct{ msg string }

func (e *privileges) Error() string { return e.msg }
func (e *privileges) Unwrap() error { return infra.ErrPrivileges }

// accessDenied tells a refusal for want of a privilege (as
// infra.CheckPrivileges reads them).
func accessDenied(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1044, 1045, 1142, 1143, 1227, 1370, 1419, 1095, 1211:
		return true
	}
	return false
}

// startExternalBroker reaches the profile's brokers (exit 3 if they do
// not answer) and starts the window at the topic's end offsets; a topic
// that is not there is created with topicPartitions partitions and
// deleted at the end (not with --keep).
func (s *scope) startExternalBroker(ctx context.Context) (err error) {
	brokers := s.opts.Profile.Broker.Brokers
	if s.kafka, err = infra.StartKafka(ctx, infra.KafkaConfig{Brokers: brokers}); err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	fmt.Fprintf(s.opts.Progress, "your broker %s: %s\n", strings.Join(brokers, ","), s.kafka.Implementation)
	topic := s.opts.Profile.Topic.Name
	cl, err := kgo.NewClient(s.kafka.ClientOpts()...)
	if err != nil {
		return infra.Unavailable(fmt.Errorf("preflight: Kafka client: %w", err))
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		if err = s.kafka.CreateTopic(ctx, topic, topicPartitions); err != nil {
			return infra.Unavailable(fmt.Errorf("preflight: %w", err))
		}
		s.dropTopic = true
		for i := range int32(topicPartitions) {
			s.startOffsets = append(s.startOffsets, evidence.PartitionOffset{Partition: i, Offset: 0})
		}
		return nil
	}
	if err != nil {
		return infra.Unavailable(fmt.Errorf("preflight: end offsets of topic %s: %w", topic, err))
	}
	ends.Each(func(o kadm.ListedOffset) {
		s.startOffsets = append(s.startOffsets, evidence.PartitionOffset{Partition: o.Partition, Offset: o.Offset})
	})
	slices.SortFunc(s.startOffsets, func(a, b evidence.PartitionOffset) int { return int(a.Partition - b.Partition) })
	fmt.Fprintf(s.opts.Progress, "topic %s exists: the window starts at its end offsets\n", topic)
	return nil
}

// closeOwn drops the database the audit created on the user's server and
// deletes the topic it created on the user's broker, each bounded; with
// Keep it says what it left.
func (s *scope) closeOwn() {
	if s.opts.Keep {
		if s.dropDB {
			fmt.Fprintf(s.opts.Progress, "kept database %s on your server\n", s.dbName)
		}
		if s.dropTopic {
			fmt.Fprintf(s.opts.Progress, "kept topic %s on your broker\n", s.opts.Profile.Topic.Name)
		}
		return
	}
	if s.dropDB && s.server != nil {
		ctx, cancel := infra.CleanupContext(context.Background())
		if _, err := s.server.DB().ExecContext(ctx, "DROP DATABASE IF EXISTS `"+s.dbName+"`"); err != nil {
			fmt.Fprintf(s.opts.Progress, "database %s is left on your server: %s\n", s.dbName, s.server.RedactErr(err))
		}
		cancel()
	}
	if s.dropTopic && s.kafka != nil {
		ctx, cancel := infra.CleanupContext(context.Background())
		if err := s.kafka.DeleteTopic(ctx, s.opts.Profile.Topic.Name); err != nil {
			fmt.Fprintf(s.opts.Progress, "topic %s is left on your broker: %v\n", s.opts.Profile.Topic.Name, err)
		}
		cancel()
	}
}

// brokerKinds are the faults of the embedded broker, which an external
// broker does not take.
var brokerKinds = []nemesis.Kind{nemesis.ProduceRefused, nemesis.ProduceTimeout, nemesis.AckLost,
	nemesis.FetchError, nemesis.Rebalance, nemesis.BrokerRestart}

// fitFaults keeps the fault kinds the profile's infrastructure takes:
// the user's server is never crashed (db-crash kills a server the tool
// started, and only that), the user's broker is never faulted through
// the embedded broker's hooks. Asked for by name, such a kind is refused
// (exit 2); within every kind (--faults all) it is left out, and said so.
func (o *Options) fitFaults() error {
	p := o.Profile
	notOffered := map[nemesis.Kind]string{}
	if p.Database.DSN != "" {
		notOffered[nemesis.DBCrash] = "the audit never kills a server it did not start (database.dsn)"
		notOffered[nemesis.ConnKill] = "on your own server the roles use your account, so their connections cannot be told apart (database.dsn)"
	}
	if p.Broker.Mode == profile.BrokerExternal {
		for _, k := range brokerKinds {
			notOffered[k] = "the broker's faults need the embedded broker (broker: external)"
		}
	}
	all := true
	for _, k := range Kinds {
		all = all && slices.Contains(o.Faults, k)
	}
	var kept []nemesis.Kind
	var left, whys []string
	byWhy := map[string][]string{}
	for _, k := range o.Faults {
		why, no := notOffered[k]
		if !no {
			kept = append(kept, k)
			continue
		}
		if !all {
			return fmt.Errorf("%w: --faults %s: not offered here: %s", ErrBadOptions, k, why)
		}
		if byWhy[why] == nil {
			whys = append(whys, why)
		}
		byWhy[why] = append(byWhy[why], string(k))
	}
	for _, why := range whys {
		left = append(left, strings.Join(byWhy[why], ", ")+": "+why)
	}
	if len(left) > 0 {
		fmt.Fprintf(o.Progress, "faults not offered here, left out: %s\n", strings.Join(left, "; "))
	}
	if o.Faults != nil {
		o.Faults = kept
		if o.Faults == nil {
			o.Faults = []nemesis.Kind{}
		}
	}
	return nil
}

// redactErr returns err with the password of the profile's DSN replaced
// in its message, still wrapping what err wraps.
func redactErr(err error, p *profile.Profile) error {
	if err == nil || p == nil || p.Database.DSN == "" {
		return err
	}
	msg := profile.Redact(err.Error(), p.Database.DSN)
	if msg == err.Error() {
		return err
	}
	return &redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// redactOutputs replaces the password of the profile's DSN in the roles'
// captured output (a role that prints its DSN must not put the password
// into the bundle).
func (s *scope) redactOutputs() error {
	p := s.opts.Profile
	if p.Database.DSN == "" {
		return nil
	}
	dir := filepath.Join(s.stage, rolesDir)
	es, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range es {
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if r := profile.Redact(string(b), p.Database.DSN); r != string(b) {
			if err := os.WriteFile(path, []byte(r), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// keepBinlogFilesSmall, on the user's own server, closes its binlog file
// whenever it passes binlog.RotateFileBytes (64 MiB) until the returned
// func is called (which waits for it): at MariaDB's default
// max_binlog_size of 1 GiB, a long audit would otherwise leave a file the
// verifier's gate refuses (evidence/bundle.MaxWitnessFileBytes, 128 MiB).
// The private server rotates at 64 MiB itself (mariadbd.MaxBinlogSizeArg).
// A failure is reported on the progress stream; the capture still refuses
// a file over the gate's bound.
func (s *scope) keepBinlogFilesSmall(ctx context.Context) (stop func()) {
	if !s.own || s.server == nil {
		return func() {}
	}
	at := s.rotateAt
	if at == 0 {
		at = binlog.RotateFileBytes
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err := binlog.KeepFilesUnder(rctx, s.server.DB(), at, binlog.RotateEvery)
		if err != nil {
			fmt.Fprintf(s.opts.Progress, "warning: the binlog files of %s are no longer kept under %d KiB: %s\n",
				s.server.Redacted(), at>>10, s.server.RedactErr(err))
		}
		if n > 0 {
			fmt.Fprintf(s.opts.Progress, "closed %d binlog file(s) of %s at %d KiB (FLUSH BINARY LOGS), so that no witness file is over the verifier's %d MiB\n",
				n, s.server.Redacted(), at>>10, bundle.MaxWitnessFileBytes>>20)
		}
	}()
	return sync.OnceFunc(func() {
		cancel()
		<-done
	})
}
