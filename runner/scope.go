package runner

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/container"
)

// runScope is what one run holds from openScope to close: the database
// server (and the private mariadbd or the container behind it, if the run
// started one), the broker (and its container), the liveness lock, the
// staging directory of the logs and witnesses, and the start of the
// witness.
type runScope struct {
	opts      *Options
	runID     string
	private   *mariadbd.Server  // nil with an external server or a container
	dbc       *container.DB     // the database's container (--db container)
	brokerCtr *container.Broker // the broker's container (--kafka container)
	dbConfig  *mysql.Config     // how the run reaches the server
	server    *infra.Server
	kafka     *infra.Kafka
	live      *infra.Liveness
	watch     *watchdog
	secret    []byte
	stageRoot string // the staging directory of the bundle (makeStage)
	stage     string // the logs' directory in it, <stageRoot>/<base>
	base      string
	// writeErr is the first write into the staged bundle that failed
	// (noteWrite): the run then ends in ErrBundleWrite.
	writeErr error
	witness  witnessStart
	// doomed are the topics of an external broker to delete once the
	// broker's record of the run is dumped (deleting a topic deletes its
	// committed offsets too).
	doomed []string
}

// openScope starts the private database server (or, with opts.DBImage,
// a container; unless opts.MySQL names an external one), connects to it, announces the run as alive
// (infra.LockName), creates the staging directory of the logs, records
// where the server's binary log stands, and starts the embedded broker
// with its data directory in the staging directory (or a broker container
// with opts.KafkaImage, or checks an external one). Leftover scratch databases of dead runs on an external server are
// mentioned on Progress. On error everything it took is released again.
func openScope(ctx context.Context, opts *Options, runID string) (_ *runScope, err error) {
	rs := &runScope{opts: opts, runID: runID, secret: make([]byte, 32), base: filepath.Base(LogDir(opts.Out))}
	_, _ = rand.Read(rs.secret)
	defer func() {
		if err != nil {
			rs.close()
		}
		if err != nil && ctx.Err() != nil { // Ctrl-C while starting: not the infrastructure's fault
			err = &marked{fmt.Errorf("%s before the first scenario: %v", interruption(ctx), err), ErrInterrupted}
		}
	}()
	if rs.dbConfig, err = rs.startDatabase(ctx); err != nil {
		return nil, err
	}
	if rs.server, err = infra.Connect(ctx, rs.dbConfig); err != nil {
		return nil, err
	}
	if rs.live, err = rs.server.HoldLock(ctx, infra.LockName(runID)); err != nil {
		return nil, err
	}
	if opts.MySQL != nil {
		if err = rs.preflight(ctx); err != nil {
			return nil, err
		}
	}
	if rs.stageRoot, rs.stage, err = makeStage(opts.Out, runID, opts.Now(), opts.Logger); err != nil {
		return nil, err
	}
	if rs.kafka, err = rs.startKafka(ctx); err != nil {
		return nil, err
	}
	if opts.MySQL != nil {
		mentionLeftovers(ctx, rs.server, opts.Progress)
	}
	rs.witness = rs.startWitness(ctx)
	return rs, nil
}

// mentionLeftovers says how many scratch databases of runs that are no
// longer alive are on the server, and how to remove them. It gives up
// quietly after infra.ProbeTimeout.
func mentionLeftovers(ctx context.Context, server *infra.Server, w io.Writer) {
	lctx, cancel := context.WithTimeout(ctx, infra.ProbeTimeout)
	defer cancel()
	ls, err := server.Leftovers(lctx)
	if dead := infra.Dead(ls); err == nil && len(dead) > 0 {
		names := make([]string, 0, 3)
		for _, l := range dead[:min(3, len(dead))] {
			names = append(names, l.Name)
		}
		if len(dead) > 3 {
			names = append(names, "...")
		}
		fmt.Fprintf(w, "note: %d scratch database(s) of earlier runs that are no longer running are on the server (%s); "+
			"'orderflow-audit clean' drops them\n", len(dead), strings.Join(names, ", "))
	}
}

func newEvidence(opts *Options, rs *runScope, runID string, start time.Time) *evidence.Evidence {
	mode := evidence.DatabaseExternal
	var dbc, kc *evidence.ContainerEnv
	switch {
	case rs.private != nil:
		mode = evidence.DatabasePrivate
	case rs.dbc != nil:
		mode, dbc = evidence.DatabaseContainer, containerEnv(rs.dbc.Image)
	}
	if rs.brokerCtr != nil {
		kc = containerEnv(rs.brokerCtr.Image)
	}
	ev := &evidence.Evidence{
		SchemaVersion: evidence.SchemaVersion,
		Tool:          evidence.Tool{Name: "orderflow-audit", Version: opts.Version, Revision: opts.Revision, Build: opts.Build},
		Run: evidence.Run{
			ID: runID, Start: start.UTC(), Seed: opts.Seed,
			Args: append([]string{}, opts.Args...), Planted: string(opts.Plant),
			Selection: selection(opts),
		},
		Environment: evidence.Environment{
			Database: evidence.DatabaseEnv{
				Flavour: rs.server.Info.Flavour, Version: rs.server.Info.Version,
				Isolation: rs.server.Info.Isolation, DSN: rs.server.Redacted(), Mode: mode, Container: dbc,
			},
			Kafka: evidence.KafkaEnv{
				Mode: rs.kafka.Mode, Implementation: rs.kafka.Implementation, Brokers: rs.kafka.Brokers, Container: kc,
			},
			Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		},
	}
	if len(ev.Run.Args) == 0 {
		ev.Run.Args = impliedArgs(opts)
	}
	return ev
}

// keepTimeout bounds the clean shutdown of a private server kept with
// --keep (1.5-2 s right after a run).
const keepTimeout = 30 * time.Second

// close releases what openScope took, each step bounded: the broker, the
// staging directory (a no-op once promoted), the liveness lock, the
// server pool, the containers (closeContainers), and the private server:
// removed with its directory, or, with --keep, shut down cleanly and kept,
// with the command that starts a server on it said on Progress. Every path out of Run comes through here
// (errors, interrupts, a lost server, a refused --out).
func (rs *runScope) close() {
	if rs.kafka != nil {
		rs.kafka.Close() // first: the embedded broker writes into the staging directory as it closes
	}
	if rs.stageRoot != "" {
		os.RemoveAll(rs.stageRoot)
	}
	if rs.live != nil {
		if rs.watch != nil && rs.watch.Lost() != nil && rs.watch.Lost().database {
			rs.live.Close() // the server is gone, and the lock with the connection
		} else {
			rs.live.Release()
		}
	}
	if rs.server != nil {
		rs.server.Close()
	}
	rs.closeContainers()
	if rs.private == nil {
		return
	}
	if !rs.opts.Keep {
		if err := rs.private.Remove(); err != nil {
			fmt.Fprintf(rs.opts.Progress, "%s\n", oneLine(err.Error()))
		}
		return
	}
	command, err := rs.private.Keep(keepTimeout)
	if err != nil {
		fmt.Fprintf(rs.opts.Progress, "private server: %s\n", oneLine(err.Error()))
	}
	fmt.Fprintf(rs.opts.Progress, "kept the private server's data directory %s; start a server on it (root, no password, "+
		"127.0.0.1:%d) with:\n  %s\n", rs.private.DataDir, rs.private.Port, command)
}
