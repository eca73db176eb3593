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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Options configure Run. Zero values take the documented defaults.
type Options struct {
	// MySQL is an external server (infra.ExternalDSN); nil starts a
	// private mariadbd for the run (Private), the default.
	MySQL *mysql.Config
	// Private configures the private server (zero: a fresh one in
	// os.TempDir() on a free port; see mariadbd.Config).
	Private mariadbd.Config
	// DBImage, when set, runs the database server in a container of this
	// image (through testcontainers-go) instead of a private mariadbd;
	// not with MySQL.
	DBImage string
	// Brokers of an external Kafka cluster; empty runs the embedded one.
	Brokers []string
	// KafkaImage, when set, runs the broker in a container of this image
	// instead of the embedded one; not with Brokers.
	KafkaImage string
	// Scenarios selects by id; empty runs all.
	Scenarios []string
	// ConsumerMode runs the scenarios that run a consumer per record
	// (spec.SelectRecord, the default ""), batched (spec.SelectBatch: as
	// their batch variants, spec.BatchID) or both (spec.SelectBoth).
	ConsumerMode string
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
	// Chaos configures the chaos scenario (its zero fields take
	// runner/nemesis's defaults; Seed is the run's).
	Chaos nemesis.Config
	// Args are the command-line arguments recorded in the evidence.
	Args []string
	// Version and Revision identify the tool, and Build is its build
	// information (nil: not recorded).
	Version, Revision string
	Build             *evidence.BuildInfo
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
	if o.Private.Logger == nil {
		o.Private.Logger = o.Logger.With("part", "private server")
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

// ErrBadOptions marks options that Run refuses before it connects to
// anything (a --timeout below what the selection needs).
var ErrBadOptions = errors.New("bad run options")

// marked wraps err and a sentinel without repeating the sentinel's text.
type marked struct{ err, mark error }

func (e *marked) Error() string   { return e.err.Error() }
func (e *marked) Unwrap() []error { return []error{e.err, e.mark} }

// NewRunID returns a run id: UTC time plus 4 random hex characters, safe in
// database and topic names.
func NewRunID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102t150405") + "_" + hex.EncodeToString(b[:])
}

// Check validates opts (after defaults) without touching anything: the
// selection, the timeout against what the selection needs (MinTimeout),
// and the output path (CheckOut). The CLI calls it before Run so that a
// bad option is refused before anything runs; Run calls it again.
func Check(opts Options) error {
	if err := opts.setDefaults(); err != nil {
		return err
	}
	selected, err := SelectModes(opts.Scenarios, opts.ConsumerMode)
	if err != nil {
		return &marked{err, ErrBadOptions}
	}
	if opts.DBImage != "" && opts.MySQL != nil {
		return &marked{errors.New("a database container and an external server (--mysql-dsn) exclude each other"), ErrBadOptions}
	}
	if opts.KafkaImage != "" && len(opts.Brokers) > 0 {
		return &marked{errors.New("a broker container and external brokers (--kafka-brokers) exclude each other"), ErrBadOptions}
	}
	if err := checkChaos(&opts, selected); err != nil {
		return &marked{err, ErrBadOptions}
	}
	if min, id := MinTimeout(selected); opts.Timeout < min {
		return &marked{fmt.Errorf("--timeout %v is below what the selected scenarios need: at least %v (%s)", opts.Timeout, min, id), ErrBadOptions}
	}
	return CheckOut(opts.Out)
}

// Run runs the selected scenarios and writes the evidence file with its
// logs. Before anything runs it refuses bad options (ErrBadOptions, or
// evidence.ErrBadOutput for the output path). It returns an error wrapping
// infra.ErrUnavailable (and writes nothing) when the database or broker is
// unreachable; one wrapping ErrInfraLost and infra.ErrUnavailable when one
// of them was lost mid-run (the scenarios it cut short are NOT_RUN; an
// existing evidence file is kept); ErrInterrupted (after writing a
// non-passing evidence file) when ctx ends early; otherwise the evidence,
// whose scenarios may have failed.
func Run(ctx context.Context, opts Options) (*evidence.Evidence, error) {
	if err := Check(opts); err != nil {
		return nil, err
	}
	_ = opts.setDefaults()
	selected, _ := SelectModes(opts.Scenarios, opts.ConsumerMode)
	unlock, err := lockOut(opts.Out)
	if err != nil {
		return nil, err
	}
	defer unlock()
	start := opts.Now()
	runID := NewRunID(start)
	sutRec, err := sutEnv(opts.SUT)
	if err != nil {
		return nil, err
	}

	rs, err := openScope(ctx, &opts, runID)
	if err != nil {
		return nil, err
	}
	defer rs.close()

	ev := newEvidence(&opts, rs, runID, start)
	ev.Environment.SUT = sutRec
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	rs.watch = startWatchdog(runCtx, rs.server, rs.kafka, cancelRun)
	for i, sc := range selected {
		if what, detail := rs.stopped(runCtx); what != "" {
			ev.Run.Interrupted = true
			ev.Scenarios = append(ev.Scenarios, notRun(sc, notRunReason(what, "before it started", detail, "")))
			continue
		}
		t0 := opts.Now()
		var res evidence.Scenario
		if missing := opts.SUT.Features.Missing(sc.Needs); len(missing) > 0 {
			res = notRun(sc, fmt.Sprintf("the system under test (%s) does not claim %s", opts.SUT.Name, featureList(missing)))
		} else if sc.BrokerControlled() && rs.kafka.Cluster() == nil {
			res = notRun(sc, "it tells the broker to fail produce requests, which only the embedded broker can be told: "+
				"this run used an external Kafka cluster")
		} else {
			var procs bool
			res, procs = runOne(runCtx, rs, sc)
			if procs {
				ev.Environment.ActorProcesses = true
			}
		}
		if res.Status == evidence.StatusNotRun && rs.stoppedNow(runCtx) {
			ev.Run.Interrupted = true
		}
		ev.Scenarios = append(ev.Scenarios, res)
		fmt.Fprintf(opts.Progress, "[%2d/%d] %-22s %-7s %6.2fs%s\n", i+1, len(selected), sc.ID, res.Status,
			opts.Now().Sub(t0).Seconds(), progressReason(res.Reason))
		if opts.OnScenario != nil {
			opts.OnScenario(res)
		}
	}
	rs.watch.Stop()
	ev.Run.End = opts.Now().UTC()
	ev.Summary = evidence.Summarize(ev.Scenarios)
	ev.Boundaries = evidence.ComputeBoundaries(ev.Scenarios)
	ev.ProofClaims = rs.proofClaims(ev)
	ev.ProofBoundary = evidence.RenderProofBoundary(ev, ev.ProofClaims)
	return ev, rs.finish(runCtx, ev)
}

// sutEnv is what the evidence records of the system under test: its name,
// features, layers and, when it can say, the digest of its source.
func sutEnv(impl *sut.Implementation) (*evidence.SUTEnv, error) {
	env := &evidence.SUTEnv{Name: impl.Name, Features: []string{}, Layers: []string{}}
	for _, f := range impl.Features {
		env.Features = append(env.Features, string(f))
	}
	for _, l := range impl.Features.Layers() {
		env.Layers = append(env.Layers, string(l))
	}
	if impl.Source != nil {
		d, err := impl.Source()
		if err != nil {
			return nil, fmt.Errorf("digest the source of %s: %w", impl.Name, err)
		}
		env.Source = &d
	}
	return env, nil
}

func featureList(fs []spec.Feature) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = "the feature " + string(f)
	}
	return strings.Join(parts, ", ")
}

// finish writes the evidence and its logs, and returns the run's error.
// A run that lost its infrastructure keeps an existing evidence file (and
// its logs): it proves nothing about the system, and the earlier file may.
// The bundle is staged whole and put in place by commitBundle: a write
// that failed at any point (an event log, a witness, the evidence file, a
// full disk) is ErrBundleWrite and leaves the previous bundle as it was.
func (rs *runScope) finish(runCtx context.Context, ev *evidence.Evidence) error {
	out := rs.opts.Out
	lost := rs.watch.Lost()
	var runErr error
	switch {
	case lost != nil:
		if _, err := os.Lstat(out); err == nil {
			return &marked{fmt.Errorf("%w; the scenarios it cut short are NOT_RUN; %s from an earlier run is kept "+
				"(this run's partial evidence is not written)", lost, out), lost}
		}
		runErr = &marked{fmt.Errorf("%w; the scenarios it cut short are NOT_RUN; evidence written to %s", lost, out), lost}
	case ev.Run.Interrupted:
		runErr = &marked{fmt.Errorf("%s; %s records what ran (not a passing run)", interruption(runCtx), out), ErrInterrupted}
	}
	after := func() {}
	if testHookWitness != nil {
		after = testHookWitness(rs.stage)
	}
	ev.Witness = rs.captureWitness(runCtx)
	after()
	if rs.writeErr != nil {
		return outError(ErrBundleWrite, "%v; this run's bundle is incomplete and not written; %s", rs.writeErr, kept(out))
	}
	// The matrix lists the witnesses and what is unwitnessed: known now.
	ev.ProofBoundary = evidence.RenderProofBoundary(ev, ev.ProofClaims)
	data, err := evidence.Marshal(ev)
	if err != nil {
		return err
	}
	if err := CheckOut(out); err != nil { // it may have changed while the run ran
		return err
	}
	if err := commitBundle(rs.stageRoot, out, data); err != nil {
		return err
	}
	return runErr
}

// testHookWitness, when set (by tests), is called with the staged logs'
// directory before the witnesses are captured, and what it returns after
// the capture: a test fills the disk for the capture alone.
var testHookWitness func(stage string) (after func())

// kept says what stays of an earlier bundle at out after a failed run.
func kept(out string) string {
	if _, err := os.Lstat(out); err == nil {
		return "the bundle " + out + " of an earlier run is kept as it was"
	}
	return "nothing was written to " + out
}

// progressReason is a scenario's reason on its progress line: one line,
// at most progressReasonMax characters (the evidence has all of it).
func progressReason(reason string) string {
	if reason == "" {
		return ""
	}
	r := oneLine(reason)
	if len(r) > progressReasonMax {
		r = r[:progressReasonMax] + "... (the evidence has the whole reason)"
	}
	return "  " + r
}

const progressReasonMax = 200

// oneLine joins the lines of a multi-line message (errors.Join) with "; ".
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
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
		FaultPoints: sc.FaultPoints(), ConsumerMode: string(sc.Mode()),
		Metrics: []evidence.Metric{}, Topics: []string{}, Logs: []evidence.LogRef{},
		Invariants: []evidence.InvariantResult{}, Tables: []evidence.TableDigest{},
	}
}

// stopped says why the run must not go on (what is "" while it may):
// interrupted (ctx cancelled by the caller: Ctrl-C, SIGTERM, a closed
// stdout) or the infrastructure lost (detail says how).
func (rs *runScope) stopped(runCtx context.Context) (what, detail string) {
	if l := rs.watch.Lost(); l != nil {
		return "infrastructure lost", l.Error()
	}
	if runCtx.Err() != nil {
		return interruption(runCtx), ""
	}
	return "", ""
}

// notRunReason is the reason of a scenario that did not run to its end:
// "not run: <what> <when>[: <detail>][ (<note>)]".
func notRunReason(what, when, detail, note string) string {
	r := "not run: " + what + " " + when
	if detail != "" {
		r += ": " + detail
	}
	if note != "" {
		r += " (" + note + ")"
	}
	return r
}

// stoppedNow tells whether the run has been stopped (interrupted or its
// infrastructure lost): a NOT_RUN scenario then makes the run interrupted,
// unlike one the system under test cannot run.
func (rs *runScope) stoppedNow(runCtx context.Context) bool {
	what, _ := rs.stopped(runCtx)
	return what != ""
}

// interruption says what interrupted the run: the cause the caller gave
// when it cancelled ctx ("interrupted by SIGINT"), else "interrupted".
func interruption(ctx context.Context) string {
	msg := context.Cause(ctx).Error()
	if strings.HasPrefix(msg, "interrupted") {
		return msg
	}
	return "interrupted (" + msg + ")"
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
	args = append(args, ChaosArgs(o.Chaos)...)
	return append(args, "--out", o.Out)
}
