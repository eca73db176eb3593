package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

// pipeline is one run's infrastructure: the server and scratch database,
// the broker and topic, the event logs; and the actors (actors.go).
type pipeline struct {
	opts  Options
	runID string

	private *mariadbd.Server // nil on an external server
	server  *infra.Server
	live    *infra.Liveness
	scratch *infra.Scratch
	db      *sql.DB // the actors' pool: interpolated parameters, enough idle connections
	kafka   *infra.Kafka
	topic   string

	logDir  string
	tmpLogs bool
	logs    []*evidence.Log

	actors
}

// privateArgs size the private server for a bench: the outbox of a
// million-row history and its indexes in memory, a redo log that does not
// force a checkpoint every few thousand orders.
var privateArgs = []string{"--innodb-buffer-pool-size=512M", "--innodb-log-file-size=512M"}

// open starts or connects to the server, creates the scratch database and
// the topic, and makes the log directory. On an error it closes what it
// opened.
func open(ctx context.Context, opts Options, runID string) (p *pipeline, err error) {
	p = &pipeline{opts: opts, runID: runID}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	cfg := opts.MySQL
	if cfg == nil {
		if p.private, err = mariadbd.Start(ctx, mariadbd.Config{NoBinlog: true, Args: privateArgs}); err != nil {
			return p, infra.Unavailable(err)
		}
		fmt.Fprintf(opts.Progress, "bench: private MariaDB server on 127.0.0.1:%d (no binary log)\n", p.private.Port)
		cfg = p.private.Config()
	}
	if p.server, err = infra.Connect(ctx, cfg); err != nil {
		return p, err
	}
	if p.live, err = p.server.HoldLock(ctx, infra.LockName(runID)); err != nil {
		return p, err
	}
	if p.scratch, err = p.server.CreateScratch(ctx, infra.ScratchName("bench", runID), runID); err != nil {
		return p, err
	}
	if p.db, err = p.actorPool(); err != nil {
		return p, err
	}
	if p.kafka, err = infra.StartKafka(ctx, infra.KafkaConfig{Brokers: opts.Brokers}); err != nil {
		return p, err
	}
	p.topic = "ofa-bench-" + runID
	if err = p.kafka.CreateTopic(ctx, p.topic, int32(opts.Partitions)); err != nil {
		return p, infra.Unavailable(err)
	}
	if err = p.makeLogDir(); err != nil {
		return p, err
	}
	return p, nil
}

// actorPool opens the scratch database for the actors: parameters
// interpolated by the driver (one round trip per statement instead of
// prepare, execute, close) and as many idle connections as actors, so
// that no statement waits for a new connection.
func (p *pipeline) actorPool() (*sql.DB, error) {
	c := p.server.ConfigFor(p.scratch.Name)
	c.InterpolateParams = true
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p.scratch.Name, err)
	}
	n := p.opts.Clients + 2*p.opts.Relays + p.opts.Consumers + 8
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

func (p *pipeline) makeLogDir() error {
	if p.opts.LogDir != "" {
		p.logDir = filepath.Join(p.opts.LogDir, p.runID)
		if err := os.MkdirAll(p.logDir, 0o755); err != nil {
			return fmt.Errorf("%w: log directory: %v", ErrBadOptions, err)
		}
		return nil
	}
	dir, err := os.MkdirTemp("", "ofa-bench-")
	if err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	p.logDir, p.tmpLogs = dir, !p.opts.Keep
	return nil
}

// log creates the buffered event log of actor.
func (p *pipeline) log(actor string) (*evidence.Log, error) {
	l, err := evidence.CreateLog(filepath.Join(p.logDir, actor+".jsonl"), p.runID, "bench")
	if err != nil {
		return nil, err
	}
	if err := l.Buffer(1 << 20); err != nil {
		return nil, err
	}
	p.logs = append(p.logs, l)
	return l, nil
}

// closeLogs flushes and closes every event log.
func (p *pipeline) closeLogs() error {
	var errs []error
	for _, l := range p.logs {
		errs = append(errs, l.Close())
	}
	p.logs = nil
	return errors.Join(errs...)
}

// close stops the actors and removes what the run made, unless Keep: the
// scratch database, the topic of an external broker, a temporary log
// directory; then the broker and the private server. Each step is bounded.
func (p *pipeline) close() {
	p.actors.stop()
	_ = p.closeLogs()
	ctx, cancel := infra.CleanupContext(context.Background())
	defer cancel()
	if p.db != nil {
		p.db.Close()
	}
	if p.scratch != nil && !p.opts.Keep {
		if err := p.scratch.Drop(ctx); err != nil {
			fmt.Fprintf(p.opts.Progress, "bench: %v\n", err)
		}
	}
	if p.kafka != nil {
		if p.kafka.Mode == infra.ModeExternal && p.topic != "" && !p.opts.Keep {
			_ = p.kafka.DeleteTopic(ctx, p.topic)
		}
		p.kafka.Close()
	}
	p.live.Release()
	if p.server != nil {
		p.server.Close()
	}
	if p.private != nil {
		_ = p.private.Remove()
	}
	if p.tmpLogs {
		_ = os.RemoveAll(p.logDir)
	}
}
