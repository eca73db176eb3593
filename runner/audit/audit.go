// Package audit audits a pipeline the tool did not write, as a black box,
// from one profile (docs/blackbox.md, ../shared/BLACKBOX.md "What the tool
// does"): the Jepsen half of `orderflow-audit audit --profile P`.
//
// Run starts a private MariaDB server with the binlog on and the profile's
// migrations applied, the embedded broker persisting into the bundle, a
// TCP proxy per process in front of the database; starts the profile's
// roles from their commands (setup.go, roles.go); drives load from our own
// client (load.go) while a seeded nemesis kills, pauses and cuts them
// (nemesis.go); heals; waits for the pipeline to settle within the
// profile's liveness bound (settle.go); captures the witnesses and writes
// the bundle atomically (bundle.go). The verdict is not this package's:
// Options.Verify, the witness-only verifier the command passes in, rules
// on the staged bundle before it is put in place, as run's verifier does.
package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// Errors of Run. Infrastructure that cannot be had wraps
// infra.ErrUnavailable (exit 3), as does ErrRoleStart's caller.
var (
	// ErrBadOptions: the options or the profile ask for what cannot be
	// done (exit 2).
	ErrBadOptions = errors.New("bad audit options")
)

// Defaults and bounds of Options.
const (
	DefaultDuration     = 5 * time.Second
	MaxDuration         = 10 * time.Minute
	DefaultReadyTimeout = 20 * time.Second
	keepTimeout         = 30 * time.Second
)

// Options configure one audit.
type Options struct {
	// Profile is the validated profile; ProfileText its file's bytes (the
	// bundle keeps them) and ProfileDir the directory its migration globs
	// are relative to, and the working directory of the roles' processes.
	Profile     *profile.Profile
	ProfileText []byte
	ProfileDir  string
	// Seed chooses the nemesis's schedule (default 1).
	Seed int64
	// Duration is the load phase, faults included (default
	// DefaultDuration).
	Duration time.Duration
	// Faults are the kinds the nemesis draws from; empty: none.
	Faults []nemesis.Kind
	// Only keeps the faults of the schedule with these numbers (empty:
	// all; nemesis.NoFaults: none), as the chaos scenario's --only-faults:
	// a shrunk schedule is the seed's with some of its faults left out.
	Only []int
	// Out is the evidence file (DIR/audit.json); its bundle's files go
	// beneath DIR/audit/.
	Out string
	// Keep keeps the private server's data directory.
	Keep bool
	// Exe is this binary: a role command whose first word is
	// orderflow-audit runs it (empty: whatever PATH finds).
	Exe string
	// ReadyTimeout bounds the start of every role (default
	// DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// Tool and Args are recorded in the evidence.
	Tool evidence.Tool
	Args []string
	// Private configures the private server.
	Private mariadbd.Config
	// Verify rules on the staged bundle's evidence file at path and
	// returns the claims to record (the verdict the command prints). It
	// is called with the claims still empty. Required.
	Verify func(ctx context.Context, path string) (evidence.Claims, error)
	// Progress receives a line per phase (default: discarded).
	Progress io.Writer
	// OnProgress, when set, is called once a second while the load runs
	// and while the pipeline settles.
	OnProgress func(Progress)
	Logger     *slog.Logger
	Now        func() time.Time
}

func (o *Options) setDefaults() error {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch p := o.Profile; {
	case p == nil:
		return fmt.Errorf("%w: no profile", ErrBadOptions)
	case o.Verify == nil:
		return fmt.Errorf("%w: no verifier", ErrBadOptions)
	case o.Duration < 500*time.Millisecond || o.Duration > MaxDuration:
		return fmt.Errorf("%w: --duration %v: want 500ms to %v", ErrBadOptions, o.Duration, MaxDuration)
	case len(p.Roles) == 0:
		return fmt.Errorf("%w: the profile has no roles: nothing to start", ErrBadOptions)
	case !strings.HasSuffix(o.Out, ".json"):
		return fmt.Errorf("%w: --out %q: want a path ending in .json (its bundle goes beside it)", ErrBadOptions, o.Out)
	}
	return o.fitFaults() // ownsrv.go
}

// lateRounds bounds how many times the roles are started again after
// the stop to settle records appended while they stopped.
const lateRounds = 2

// Result is what one audit did.
type Result struct {
	// Evidence is the evidence written; Path where.
	Evidence *evidence.BlackBox
	Path     string
	// Requests counts the load client's requests by outcome.
	Requests map[evidence.ClientOutcome]int
	// Faults counts the faults applied by kind; Nemesis lists them.
	Faults  map[string]int
	Nemesis []NemesisEvent
	// Settled says whether the pipeline settled within the liveness
	// bound; Unsettled what was still missing when it did not.
	Settled   bool
	Unsettled string
	// Resettled is how many times the roles were started again after
	// the stop because records landed while they stopped (lateRounds at
	// most); not counted in Restarts.
	Resettled int
	// Restarts counts the roles' processes started again after they ended.
	Restarts int
}

// NewRunID returns a run id: the time and four random hex digits.
func NewRunID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102t150405") + "_" + hex.EncodeToString(b[:])
}

// Run runs one audit. A run that was interrupted (ctx ended) after the
// roles started still captures and writes its bundle, marked interrupted;
// an error means no bundle was written. No error shows the password of
// the profile's DSN.
func Run(ctx context.Context, opts Options) (*Result, error) {
	res, err := run(ctx, opts)
	return res, redactErr(err, opts.Profile)
}

func run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	started := opts.Now()
	runID := NewRunID(started)
	s, err := setUp(ctx, &opts, runID)
	if err != nil {
		return nil, err
	}
	defer s.close()
	stopRotate := s.keepBinlogFilesSmall(ctx)
	defer stopRotate()
	windowStart := opts.Now().UTC()
	base := vars{"db": s.dbName, "dsn": s.dsn(s.cfg.Addr), "broker": strings.Join(s.kafka.Brokers, ","),
		"topic": opts.Profile.Topic.Name, "run": runID}
	rs, err := planRoles(s, base)
	if err != nil {
		return nil, err
	}
	var lp *loadPlan
	if l := opts.Profile.Load; l != nil {
		lv := base
		if l.SQL != nil {
			// The SQL client reaches the database through a proxy of its
			// own, so that the nemesis can slow and cut its link too.
			link, err := s.proxies.Add(ClientTarget+">database", s.cfg.Addr)
			if err != nil {
				return nil, err
			}
			rs.client = &replica{role: ClientTarget, name: ClientTarget, link: link}
			lv = base.with("dsn", s.dsn(link.Addr))
		}
		if lp, err = newLoadPlan(l, lv, opts.Duration); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(opts.Progress, "audit %s of profile %s: starting %d process(es)\n", runID, opts.Profile.Name, len(rs.list))
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			rs.stopAll()
		}
	}
	defer stop()
	if err := rs.startAll(ctx, opts.ReadyTimeout); err != nil {
		return nil, err
	}

	res := &Result{}
	faults := Schedule(opts)
	fmt.Fprintf(opts.Progress, "load for %v with %d fault(s) planned (seed %d)\n", opts.Duration, len(faults), opts.Seed)
	lctx, cancel := context.WithTimeout(ctx, opts.Duration)
	nr := &nemesisRun{s: s, roles: rs}
	if len(faults) > 0 {
		nr.aim = startAimer(lctx, s)
	}
	nemDone := make(chan struct{})
	go func() {
		defer close(nemDone)
		nr.run(lctx, faults)
	}()
	cl := newClient()
	rp := &reporter{s: s, cl: cl, nr: nr}
	rp.setPhase("load", time.Now().Add(opts.Duration))
	pctx, cancelProgress := context.WithCancel(ctx)
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		if opts.OnProgress != nil {
			rp.run(pctx, opts.OnProgress)
		}
	}()
	stopProgress := func() { // and wait: nothing is reported after
		cancelProgress()
		<-progressDone
	}
	defer stopProgress()
	if lp != nil {
		cl.run(lctx, lp, opts.Duration)
	}
	<-lctx.Done()
	cancel()
	<-nemDone
	nr.heal()

	interrupted := ctx.Err() != nil
	if !interrupted {
		bound := time.Duration(opts.Profile.Promises.Liveness)
		fmt.Fprintf(opts.Progress, "healed; settling (bound %v)\n", bound)
		rp.setPhase("settle", time.Now().Add(bound))
		st, err := newSettler(s)
		if err != nil {
			return nil, err
		}
		res.Settled, res.Unsettled = st.wait(ctx, bound)
		// A role may append records while it is being stopped (a
		// producer's retry in flight, answered only after its request
		// timeout), when no consumer is left to read them. Stopped, the
		// pipeline is started again to settle what it appended, at most
		// lateRounds times; the witnesses then show whatever is left.
		for res.Settled && ctx.Err() == nil && res.Resettled < lateRounds {
			rs.stopProcesses()
			grew, err := st.grown(ctx)
			if err != nil || grew == "" {
				break
			}
			fmt.Fprintf(opts.Progress, "records were appended while the roles stopped (%s): starting them again to settle those\n", grew)
			if err := rs.restartAll(ctx, opts.ReadyTimeout); err != nil {
				res.Settled, res.Unsettled = false, "starting the roles again after records landed during the stop: "+err.Error()
				break
			}
			res.Resettled++
			res.Settled, res.Unsettled = st.wait(ctx, bound)
		}
		st.close()
		interrupted = ctx.Err() != nil
	}
	settledAt := opts.Now().UTC()
	stopProgress()
	stop()
	stopRotate()
	for _, r := range rs.list {
		res.Restarts += r.starts - 1 - res.Resettled
	}
	res.Requests, res.Faults = cl.counts, nr.counts()
	res.Nemesis = nr.events
	parts := bundleParts{runID: runID, started: started, windowStart: windowStart, settledAt: settledAt,
		interrupted: interrupted, client: cl, haveLoad: lp != nil, roles: rs}
	if len(opts.Faults) > 0 {
		parts.nemesis = nr
	}
	bb, err := s.writeBundle(ctx, parts)
	if err != nil {
		return nil, err
	}
	res.Evidence, res.Path = bb, opts.Out
	return res, nil
}
