package main

import (
	"context"
	stdsql "database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Names shared by the processes: the SQL topic of Watermill's forwarder
// (its tables are watermill_outbox and watermill_offsets_outbox, created by
// migrations/0002_watermill.up.sql) and the metadata key that carries an
// order's id, which the forwarder uses as the record key.
const (
	outboxTopic  = "outbox"
	aggregateKey = "aggregate_id"
)

// errUsage marks a bad flag or a missing setting: exit 2.
var errUsage = errors.New("usage")

// envOr returns the environment variable name, or def when it is unset.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// newFlagSet is a FlagSet whose usage names the command and its
// environment variables.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: watermill-example %s [flags]\n\n%s\n\nFlags (each defaults to the environment variable named in brackets):\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// dbFlags are the database settings every process takes.
type dbFlags struct {
	dsn, name string
}

func (d *dbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.dsn, "mysql-dsn", envOr("MYSQL_DSN", ""), "go-sql-driver `DSN` of the server [MYSQL_DSN] (required)")
	fs.StringVar(&d.name, "db", envOr("MYSQL_DATABASE", ""), "`database` to use, replacing the DSN's [MYSQL_DATABASE]")
}

// open opens the database and checks that it answers.
func (d dbFlags) open(ctx context.Context) (*stdsql.DB, error) {
	if d.dsn == "" {
		return nil, fmt.Errorf("%w: --mysql-dsn (or MYSQL_DSN) is required", errUsage)
	}
	cfg, err := mysql.ParseDSN(d.dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: --mysql-dsn: %v", errUsage, err)
	}
	if d.name != "" {
		cfg.DBName = d.name
	}
	if cfg.DBName == "" {
		return nil, fmt.Errorf("%w: no database: give --db or a DSN with one", errUsage)
	}
	db, err := stdsql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", cfg.DBName, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to database %s at %s: %w", cfg.DBName, cfg.Addr, err)
	}
	return db, nil
}

// kafkaFlags are the broker settings.
type kafkaFlags struct {
	brokers, topic string
}

func (k *kafkaFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.brokers, "brokers", envOr("KAFKA_BROKERS", ""), "Kafka `host:port` list, comma separated [KAFKA_BROKERS] (required)")
	fs.StringVar(&k.topic, "topic", envOr("KAFKA_TOPIC", "orders"), "Kafka `topic` of the OrderCreated records [KAFKA_TOPIC]")
}

// check returns the broker list, and refuses an empty list or topic.
func (k kafkaFlags) check() ([]string, error) {
	brokers, err := brokerList(k.brokers)
	if err != nil {
		return nil, err
	}
	if k.topic == "" {
		return nil, fmt.Errorf("%w: --topic must not be empty", errUsage)
	}
	return brokers, nil
}

// brokerList splits a comma-separated broker list.
func brokerList(s string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: --brokers (or KAFKA_BROKERS) is required", errUsage)
	}
	return out, nil
}

// newLogger is the process's logger: text lines on stderr, which the audit
// captures into its bundle as the role's claims (never as evidence).
func newLogger(stderr io.Writer, role string) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("role", role)
}

// exitCode maps a command's error to its exit code, printing it.
func exitCode(stderr io.Writer, name string, err error) int {
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "watermill-example %s: %v\n", name, err)
		return 2
	}
	fmt.Fprintf(stderr, "watermill-example %s: %v\n", name, err)
	return 1
}

// parseFlags parses args; ok is false when the command must exit with
// code (0 for -h, 2 for a bad flag or a stray argument).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "watermill-example %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}
