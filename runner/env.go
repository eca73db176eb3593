package runner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
)

// ActorScenario is the actor name of the scenario driver itself: seeds,
// observations, lease expiry, invariant queries.
const ActorScenario = "scenario"

// Env is what one scenario runs against: its own scratch database, its own
// topics, its own event logs.
type Env struct {
	RunID    string
	Scenario Scenario
	Server   *infra.Server
	Scratch  *infra.Scratch
	DB       *sql.DB
	Kafka    *infra.Kafka
	// SUT is the system under test the scenario drives.
	SUT    sut.Implementation
	Plant  plant.Bug
	Faults *fault.Injector
	Secret []byte
	Rand   *rand.Rand
	Log    *slog.Logger
	Result Result
	// Chaos configures the chaos scenario (defaults set, Seed the run's).
	Chaos nemesis.Config

	// exe is the path of this binary for actor processes ("" = in-process
	// only).
	exe string
	// crashDB kills the private database server and starts it again (nil
	// without a private server): the chaos scenario's db-crash.
	crashDB func(context.Context) (string, error)

	mu        sync.Mutex
	logDir    string // absolute: where this scenario's logs are written
	logRel    string // the same, relative to the evidence file
	logs      map[string]*evidence.Log
	logOrder  []string
	topics    []string
	closers   []func()
	processes bool
}

// ActorLog returns the event log of actor, creating <scenario>/<actor>.jsonl
// on first use.
func (e *Env) ActorLog(actor string) (*evidence.Log, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.logs[actor]; ok {
		return l, nil
	}
	if err := os.MkdirAll(e.logDir, 0o755); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	l, err := evidence.CreateLog(filepath.Join(e.logDir, actor+".jsonl"), e.RunID, e.Scenario.ID)
	if err != nil {
		return nil, err
	}
	e.logs[actor] = l
	e.logOrder = append(e.logOrder, actor)
	return l, nil
}

// logPath returns the path of an actor's log for a child process, and
// registers it so that the evidence lists it. The child creates the file.
func (e *Env) logPath(actor string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.logs[actor]; ok {
		return "", fmt.Errorf("actor %s already has a log", actor)
	}
	if err := os.MkdirAll(e.logDir, 0o755); err != nil {
		return "", fmt.Errorf("create log directory: %w", err)
	}
	e.logs[actor] = nil
	e.logOrder = append(e.logOrder, actor)
	e.processes = true
	return filepath.Join(e.logDir, actor+".jsonl"), nil
}

// Emit writes a scenario-driver event.
func (e *Env) Emit(ev evidence.Event) error {
	l, err := e.ActorLog(ActorScenario)
	if err != nil {
		return err
	}
	ev.Actor = ActorScenario
	return l.Emit(ev)
}

// Topic creates a fresh topic for this scenario: ofa.<run>.<scenario>[.<suffix>].
func (e *Env) Topic(ctx context.Context, suffix string) (string, error) {
	name := "ofa." + e.RunID + "." + e.Scenario.ID
	if suffix != "" {
		name += "." + suffix
	}
	if err := e.Kafka.CreateTopic(ctx, name, 1); err != nil {
		return "", err
	}
	e.mu.Lock()
	e.topics = append(e.topics, name)
	e.mu.Unlock()
	return name, nil
}

// Defer registers f to run when the scenario ends (last registered first).
func (e *Env) Defer(f func()) {
	e.mu.Lock()
	e.closers = append(e.closers, f)
	e.mu.Unlock()
}

func (e *Env) close() {
	e.mu.Lock()
	cs := e.closers
	e.closers = nil
	e.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// closeLogs closes every log and returns their references with digests.
func (e *Env) closeLogs() ([]evidence.LogRef, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var refs []evidence.LogRef
	var firstErr error
	for _, actor := range e.logOrder {
		if l := e.logs[actor]; l != nil {
			if err := l.Close(); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		abs := filepath.Join(e.logDir, actor+".jsonl")
		sum, lines, err := evidence.FileDigest(abs)
		if e.logs[actor] == nil && errors.Is(err, fs.ErrNotExist) {
			// A child process that died before creating its log: there
			// is nothing to reference, and that is said.
			if firstErr == nil {
				firstErr = fmt.Errorf("actor %s left no event log (its process ended before creating it)", actor)
			}
			continue
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		refs = append(refs, evidence.LogRef{
			Path:   filepath.ToSlash(filepath.Join(e.logRel, actor+".jsonl")),
			Actor:  actor,
			SHA256: sum,
			Lines:  lines,
		})
	}
	return refs, firstErr
}

// QueryInt runs a query returning one integer.
func (e *Env) QueryInt(ctx context.Context, q string, args ...any) (int64, error) {
	var n sql.NullInt64
	if err := e.DB.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: %w", firstLine(q), err)
	}
	return n.Int64, nil
}

func firstLine(q string) string {
	q = strings.TrimSpace(q)
	if i := strings.IndexByte(q, '\n'); i > 0 {
		q = q[:i]
	}
	return q
}
