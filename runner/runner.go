// Package runner drives the system under test through named scenarios,
// injects faults at the commit, send and ack boundaries, records every
// action as JSONL events and assembles the evidence file.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Options configure Run. Zero values take the documented defaults.
type Options struct {
	// MySQL is the resolved server config (infra.ResolveDSN).
	MySQL *mysql.Config
	// Brokers of an external Kafka cluster; empty runs the embedded one.
	Brokers []string
	// Scenarios selects by id; empty runs all.
	Scenarios []string
	// Seed feeds the scenarios' random choices (default 1).
	Seed int64
	// Timeout bounds each scenario (default 60s).
	Timeout time.Duration
	// Keep keeps the scratch databases (and topics) for inspection.
	Keep bool
	// Out is the evidence file (default evidence/u80.json); its logs go to
	// the directory beside it named after it without ".json".
	Out string
	// SUT is the system under test (default: sut.Reference(), this
	// project's order service, relay and consumer).
	SUT *sut.Implementation
	// Plant plants one bug into the system under test (negative control).
	Plant plant.Bug
	// Args are the command-line arguments recorded in the evidence.
	Args []string
	// Version and Revision identify the tool.
	Version, Revision string
	// Executable is this binary, for scenarios that run actors as OS
	// processes (default os.Executable()).
	Executable string
	// Progress receives one line per scenario (default io.Discard).
	Progress io.Writer
	// OnScenario is called with each finished scenario, in run order.
	OnScenario func(evidence.Scenario)
	// Logger receives diagnostics (default discards).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o *Options) setDefaults() error {
	if o.MySQL == nil {
		cfg, err := infra.ResolveDSN("")
		if err != nil {
			return err
		}
		o.MySQL = cfg
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.SUT == nil {
		ref := sut.Reference()
		o.SUT = &ref
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Out == "" {
		o.Out = filepath.Join("evidence", "u80.json")
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Executable == "" {
		if exe, err := os.Executable(); err == nil {
			o.Executable = exe
		}
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return nil
}

// ErrInterrupted is returned (with the evidence of what ran) when the
// context was cancelled before every scenario finished.
var ErrInterrupted = errors.New("run interrupted")

// NewRunID returns a run id: UTC time plus 4 random hex characters, safe in
// database and topic names.
func NewRunID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102t150405") + "_" + hex.EncodeToString(b[:])
}

// Run runs the selected scenarios and writes the evidence file with its
// logs. It returns an error wrapping infra.ErrUnavailable (and writes
// nothing) when the database or broker is unreachable; ErrInterrupted (after
// writing a non-passing evidence file) when ctx ends early; otherwise the
// evidence, whose scenarios may have failed.
func Run(ctx context.Context, opts Options) (*evidence.Evidence, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	selected, err := Select(opts.Scenarios)
	if err != nil {
		return nil, err
	}
	start := opts.Now()
	runID := NewRunID(start)

	server, err := infra.Connect(ctx, opts.MySQL)
	if err != nil {
		return nil, err
	}
	defer server.Close()
	kafka, err := infra.StartKafka(ctx, infra.KafkaConfig{Brokers: opts.Brokers})
	if err != nil {
		return nil, err
	}
	defer kafka.Close()

	outDir := filepath.Dir(opts.Out)
	base := strings.TrimSuffix(filepath.Base(opts.Out), filepath.Ext(opts.Out))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", outDir, err)
	}
	removeStaleStages(outDir, base, opts.Now(), opts.Logger)
	stage, err := os.MkdirTemp(outDir, "."+base+"-"+runID+"-")
	if err != nil {
		return nil, fmt.Errorf("create staging directory: %w", err)
	}
	defer os.RemoveAll(stage) // a no-op once promoted

	ev := &evidence.Evidence{
		SchemaVersion: evidence.SchemaVersion,
		Tool:          evidence.Tool{Name: "orderflow-audit", Version: opts.Version, Revision: opts.Revision},
		Run: evidence.Run{
			ID: runID, Start: start.UTC(), Seed: opts.Seed,
			Args: append([]string{}, opts.Args...), Planted: string(opts.Plant),
		},
		Environment: evidence.Environment{
			Database: evidence.DatabaseEnv{
				Flavour: server.Info.Flavour, Version: server.Info.Version,
				Isolation: server.Info.Isolation, DSN: server.Redacted(),
			},
			Kafka: evidence.KafkaEnv{Mode: kafka.Mode, Implementation: kafka.Implementation, Brokers: kafka.Brokers},
			Go:    runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
			SUT: sutEnv(opts.SUT),
		},
	}
	if len(ev.Run.Args) == 0 {
		ev.Run.Args = impliedArgs(&opts)
	}

	scope := runScope{opts: &opts, runID: runID, server: server, kafka: kafka, secret: make([]byte, 32), stage: stage, base: base}
	_, _ = rand.Read(scope.secret)
	for i, sc := range selected {
		if ctx.Err() != nil {
			ev.Run.Interrupted = true
			res := notRun(sc, "run interrupted before this scenario started")
			ev.Scenarios = append(ev.Scenarios, res)
			continue
		}
		t0 := opts.Now()
		var res evidence.Scenario
		if missing := opts.SUT.Features.Missing(sc.Needs); len(missing) > 0 {
			res = notRun(sc, fmt.Sprintf("the system under test (%s) does not claim %s", opts.SUT.Name, featureList(missing)))
		} else {
			var procs bool
			res, procs = runOne(ctx, scope, sc)
			if procs {
				ev.Environment.ActorProcesses = true
			}
		}
		if ctx.Err() != nil {
			ev.Run.Interrupted = true
		}
		ev.Scenarios = append(ev.Scenarios, res)
		fmt.Fprintf(opts.Progress, "[%2d/%d] %-22s %-4s %6.2fs%s\n", i+1, len(selected), sc.ID, res.Status,
			opts.Now().Sub(t0).Seconds(), reasonSuffix(res))
		if opts.OnScenario != nil {
			opts.OnScenario(res)
		}
	}

	ev.Run.End = opts.Now().UTC()
	ev.Summary = evidence.Summarize(ev.Scenarios)
	ev.Boundaries = evidence.ComputeBoundaries(ev.Scenarios)
	ev.ProofBoundary = evidence.ComputeProofBoundary(ev)

	// Validate first, so that a failure leaves the previous evidence and
	// its logs as they were; then swap the logs in and write the file.
	data, err := evidence.Marshal(ev)
	if err != nil {
		return ev, err
	}
	if err := promoteLogs(stage, filepath.Join(outDir, base)); err != nil {
		return ev, err
	}
	if err := evidence.WriteAtomic(opts.Out, data); err != nil {
		return ev, err
	}
	if ev.Run.Interrupted {
		return ev, ErrInterrupted
	}
	return ev, nil
}

// sutEnv is what the evidence records of the system under test.
func sutEnv(impl *sut.Implementation) *evidence.SUTEnv {
	env := &evidence.SUTEnv{Name: impl.Name, Features: []string{}, Layers: []string{}}
	for _, f := range impl.Features {
		env.Features = append(env.Features, string(f))
	}
	for _, l := range impl.Features.Layers() {
		env.Layers = append(env.Layers, string(l))
	}
	return env
}

func featureList(fs []spec.Feature) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = "the feature " + string(f)
	}
	return strings.Join(parts, ", ")
}

func reasonSuffix(s evidence.Scenario) string {
	if s.Reason == "" {
		return ""
	}
	return "  " + s.Reason
}

func notRun(sc Scenario, reason string) evidence.Scenario {
	s := scenarioRecord(sc)
	s.Status = evidence.StatusNotRun
	s.Reason = reason
	s.Line = evidence.FormatLine(sc.Suite, sc.ID, s.Status, nil)
	return s
}

func scenarioRecord(sc Scenario) evidence.Scenario {
	return evidence.Scenario{
		ID: sc.ID, Suite: sc.Suite, Boundary: sc.Boundary, Description: sc.Description,
		FaultPoints: sc.FaultPoints(),
		Metrics:     []evidence.Metric{}, Topics: []string{}, Logs: []evidence.LogRef{},
		Invariants: []evidence.InvariantResult{}, Tables: []evidence.TableDigest{},
	}
}

type runScope struct {
	opts   *Options
	runID  string
	server *infra.Server
	kafka  *infra.Kafka
	secret []byte
	stage  string
	base   string
}

// runOne runs one scenario in a fresh scratch database and returns its
// record, and whether it ran actors as OS processes.
func runOne(parent context.Context, rs runScope, sc Scenario) (evidence.Scenario, bool) {
	rec := scenarioRecord(sc)
	t0 := rs.opts.Now()
	ctx, cancel := context.WithTimeout(parent, rs.opts.Timeout)
	defer cancel()

	fail := func(reason string) (evidence.Scenario, bool) {
		rec.Status = evidence.StatusFail
		rec.Reason = reason
		rec.Line = evidence.FormatLine(sc.Suite, sc.ID, rec.Status, rec.Metrics)
		rec.ElapsedMS = rs.opts.Now().Sub(t0).Milliseconds()
		return rec, false
	}

	name := infra.ScratchName(rs.runID, sc.ID)
	scratch, err := rs.server.CreateScratch(ctx, name, rs.runID)
	if err != nil {
		if parent.Err() != nil {
			return fail("interrupted before the scenario started: " + parent.Err().Error())
		}
		return fail("could not create scratch database: " + err.Error())
	}
	rec.Database = name
	cleanup := context.WithoutCancel(ctx)
	env := &Env{
		RunID: rs.runID, Scenario: sc, Server: rs.server, Scratch: scratch, DB: scratch.DB,
		Kafka: rs.kafka, SUT: *rs.opts.SUT, Plant: rs.opts.Plant, Faults: &fault.Injector{}, Secret: rs.secret,
		Rand:   mrand.New(mrand.NewPCG(uint64(rs.opts.Seed), scenarioStream(sc.ID))),
		Log:    rs.opts.Logger.With("scenario", sc.ID),
		exe:    rs.opts.Executable,
		logDir: filepath.Join(rs.stage, sc.ID),
		logRel: rs.base + "/" + sc.ID,
		logs:   map[string]*evidence.Log{},
	}

	runErr := safeRun(ctx, env, sc)
	env.close()

	// The end state is recorded whatever happened, so that the verifier
	// can compare it with the replay.
	endErr := env.recordEndState(cleanup, &rec)
	refs, logErr := env.closeLogs()
	rec.Logs = refs
	rec.Topics = append([]string{}, env.topics...)
	rec.Metrics = env.Result.Metrics
	if rec.Metrics == nil {
		rec.Metrics = []evidence.Metric{}
	}

	if rs.opts.Keep {
		rec.Kept = true
		fmt.Fprintf(rs.opts.Progress, "kept database %s for scenario %s\n", name, sc.ID)
		scratch.DB.Close()
	} else {
		if err := scratch.Drop(cleanup); err != nil {
			rs.opts.Logger.Warn("drop scratch database", "database", name, "err", err)
		}
		for _, t := range env.topics {
			if err := rs.kafka.DeleteTopic(cleanup, t); err != nil {
				rs.opts.Logger.Warn("delete topic", "topic", t, "err", err)
			}
		}
	}

	var reasons []string
	switch {
	case parent.Err() != nil:
		reasons = append(reasons, "interrupted: "+parent.Err().Error())
	case runErr != nil:
		reasons = append(reasons, "could not run: "+runErr.Error())
	}
	if endErr != nil {
		reasons = append(reasons, "end state: "+endErr.Error())
	}
	if logErr != nil {
		reasons = append(reasons, "event log: "+logErr.Error())
	}
	env.Result.judge(sc.Scenario, runErr == nil && parent.Err() == nil)
	if !env.Result.Passed() {
		reasons = append(reasons, env.Result.Reason())
	}
	rec.ElapsedMS = rs.opts.Now().Sub(t0).Milliseconds()
	if len(reasons) > 0 {
		rec.Status = evidence.StatusFail
		rec.Reason = strings.Join(reasons, "; ")
	} else {
		rec.Status = evidence.StatusPass
	}
	rec.Line = evidence.FormatLine(sc.Suite, sc.ID, rec.Status, rec.Metrics)
	return rec, env.processes
}

// safeRun turns a panic in a scenario into an error, so that one broken
// scenario cannot take the run (and its cleanup) down.
func safeRun(ctx context.Context, env *Env, sc Scenario) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scenario panicked: %v", r)
		}
	}()
	return sc.Run(ctx, env)
}

// promoteLogs replaces dst (the logs of an earlier run) with stage. dst is
// removed only when it holds nothing but directories and .jsonl files.
func promoteLogs(stage, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		if err := onlyLogs(dst); err != nil {
			return fmt.Errorf("refusing to replace %s: %w", dst, err)
		}
		old := dst + ".old-" + filepath.Base(stage)
		if err := os.Rename(dst, old); err != nil {
			return fmt.Errorf("replace logs %s: %w", dst, err)
		}
		if err := os.Rename(stage, dst); err != nil {
			if rerr := os.Rename(old, dst); rerr != nil {
				return fmt.Errorf("move logs to %s: %w (and restoring the previous logs from %s failed: %v)", dst, err, old, rerr)
			}
			return fmt.Errorf("move logs to %s: %w", dst, err)
		}
		return os.RemoveAll(old)
	}
	if err := os.Rename(stage, dst); err != nil {
		return fmt.Errorf("move logs to %s: %w", dst, err)
	}
	return nil
}

func onlyLogs(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		return fmt.Errorf("%s is not an event log", p)
	})
}

// scenarioStream derives a scenario's random stream from its id, so that a
// scenario draws the same choices for a seed whichever others are selected.
func scenarioStream(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// impliedArgs are the command-line arguments equivalent to opts, recorded
// when Run is called as a library (without Args): the verifier reads the
// selection and the planted bug from run.args.
func impliedArgs(o *Options) []string {
	args := []string{}
	if len(o.Scenarios) > 0 {
		args = append(args, "--scenarios", strings.Join(o.Scenarios, ","))
	}
	if o.Plant != "" {
		args = append(args, "--plant", string(o.Plant))
	}
	if o.Seed != 1 {
		args = append(args, "--seed", strconv.FormatInt(o.Seed, 10))
	}
	if o.Keep {
		args = append(args, "--keep")
	}
	return append(args, "--out", o.Out)
}

// staleStage is how old a staging directory must be before a later run
// removes it: only a run killed outright (SIGKILL) leaves one behind.
const staleStage = time.Hour

// removeStaleStages removes the staging directories (.<base>-<run>-*) that
// runs killed outright left in outDir, when they are older than staleStage
// and hold nothing but event logs.
func removeStaleStages(outDir, base string, now time.Time, log *slog.Logger) {
	matches, _ := filepath.Glob(filepath.Join(outDir, "."+base+"-*"))
	for _, m := range matches {
		st, err := os.Stat(m)
		if err != nil || !st.IsDir() || now.Sub(st.ModTime()) < staleStage || onlyLogs(m) != nil {
			continue
		}
		if err := os.RemoveAll(m); err != nil {
			log.Warn("remove stale staging directory", "dir", m, "err", err)
		}
	}
}
