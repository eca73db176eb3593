package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/checks/bbverify"
	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/runner/audit"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

const auditAbout = `Audits a pipeline the tool did not write, as a black box: starts its
processes from the profile, drives load through them under seeded faults,
and decides from the binlog, the broker's log and the client's record alone.

Audits a pipeline the tool did not write, as a black box, from one profile
(docs/blackbox.md): starts a private MariaDB server with the binary log on and
the profile's migrations applied, the embedded broker with the profile's topic
(or, when the profile names them, uses your own server, database.dsn, and
Kafka, broker: external, after a preflight of the binary log, the account's
privileges and the broker), a TCP proxy per process in front of the database, and the profile's roles from
their commands (each in its own process group, its stdout and stderr captured
into the bundle, started again whenever it ends); sends the profile's load from
the tool's own client (HTTP requests, or SQL statements it runs itself in one
transaction per request), every request and what it learned recorded; injects a
seeded schedule of faults (--faults: kill = SIGKILL and restart, pause =
SIGSTOP past a bound then SIGCONT, latency and net-cut on a process's database
link); heals; waits for the pipeline to settle within the profile's liveness
bound (every outbox row has its record, every consumer group has committed the
end offset); captures the binlog and the broker's log; writes the bundle
(--out and the directory beside it, named after it) whole or not at all; and
verifies it with the witness-only rules, as 'verify' does.

Prints progress on stderr, then one observation line and the verdict on
stdout. Exit codes as run's: 0 PASS, 1 FAIL, 2 a bad profile or flag (the
profile's problems one per line, with their line numbers), 3 infrastructure
unavailable or a role that would not start (nothing is left running), 4
INCONCLUSIVE or interrupted (Ctrl-C: the processes are stopped, the
witnesses captured and the bundle written, marked interrupted).

A role command whose first word is orderflow-audit runs this very binary.
Templates in commands, environment, readiness URLs and the load:
{{db}} {{dsn}} {{proxy.ROLE.db}} {{broker}} {{topic}} {{run}} {{replica}}
{{port}} {{listen}} {{role.ROLE}}, and in the load {{n}} {{key}} {{token}}.`

// auditFlags are the flags of audit.
type auditFlags struct {
	profile, out, faults string
	only                 string
	progress             string
	seed                 int64
	duration, ready      time.Duration
	keep                 bool
}

func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var af auditFlags
	fs := newFlagSet("audit", "audit --profile FILE [flags]", auditAbout,
		`orderflow-audit audit --profile profiles/reference.yaml --seed 3 --duration 5s --faults kill,pause`)
	fs.StringVar(&af.profile, "profile", "", "the pipeline's profile (`file`, YAML; required)")
	fs.StringVar(&af.out, "out", filepath.Join("evidence", "audit.json"), "evidence `file` to write (.json); its bundle goes in the directory beside it named after it")
	fs.Int64Var(&af.seed, "seed", 1, "`seed` of the nemesis's schedule")
	fs.DurationVar(&af.duration, "duration", audit.DefaultDuration, "load phase, faults included (`duration`)")
	fs.StringVar(&af.faults, "faults", "all", "fault `kinds` to draw from: all, none, or a list of "+audit.KindList())
	fs.StringVar(&af.only, "only-faults", "", "keep only these `numbers` of the seed's schedule (comma-separated, or none;\nwhat explore --profile's shrinking prints)")
	fs.DurationVar(&af.ready, "ready-timeout", audit.DefaultReadyTimeout, "bound of every role's start (`duration`)")
	fs.BoolVar(&af.keep, "keep", false, "keep the private server's data directory (on your own server and broker: the run's database and topic)")
	fs.StringVar(&af.progress, "progress", "auto", "a progress line on stderr: `auto` (on a terminal), on, off")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, "audit", usageErrorf("unexpected argument %q", fs.Arg(0)))
	}
	opts, err := af.options(args)
	if err != nil {
		return failProfile(stderr, "audit", err)
	}
	if af.progress != "auto" && af.progress != "on" && af.progress != "off" {
		return fail(stderr, "audit", usageErrorf("--progress %q: want auto, on or off", af.progress))
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	bar := &statusLine{w: &pipeGuard{w: stderr, name: "stderr", cancel: cancel},
		on: af.progress == "on" || (af.progress == "auto" && isTerminal(stderr))}
	stderr = bar
	stdout = &pipeGuard{w: stdout, name: "stdout", cancel: cancel}
	opts.Progress = stderr
	if bar.on {
		opts.OnProgress = bar.draw
	}
	opts.Verify = auditClaims
	res, err := audit.Run(ctx, opts)
	if err != nil {
		if cause := interruption(ctx); cause != nil {
			return interrupted(stderr, "audit", cause, "before the bundle was written: "+err.Error())
		}
		return fail(stderr, "audit", err)
	}
	v, err := bbverify.Verify(context.WithoutCancel(ctx), res.Path, bbverify.Options{HoldMemory: true})
	if err != nil {
		return fail(stderr, "audit", fmt.Errorf("verify %s: %w", res.Path, err))
	}
	bar.clear()
	fmt.Fprintln(stdout, observation(res, v))
	writeFindings(stdout, v)
	if !res.Settled && !res.Evidence.Run.Interrupted {
		fmt.Fprintf(stderr, "the pipeline did not settle within its liveness bound %s: %s\n", res.Evidence.Liveness.Bound, res.Unsettled)
	}
	fmt.Fprintf(stderr, "bundle written to %s; 'orderflow-audit verify %s' re-checks it\n", res.Path, res.Path)
	// An interrupted audit's verdict is at best INCONCLUSIVE: the
	// verifier makes what only settling would show (pending, lag, effects
	// still to come) inconclusive, and says the run was interrupted.
	if res.Evidence.Run.Interrupted {
		fmt.Fprintf(stderr, "%s audit: %v; the bundle is marked interrupted\n", progName, interruption(ctx))
	}
	return verdictExit(checks.Status(v.Status))
}

// auditClaims are the claims an audit records: the witness-only
// verifier's verdict of the staged bundle.
func auditClaims(ctx context.Context, path string) (evidence.Claims, error) {
	v, err := bbverify.Verify(context.WithoutCancel(ctx), path, bbverify.Options{HoldMemory: true})
	if err != nil {
		return evidence.Claims{}, err
	}
	if v.Layer == nil {
		return evidence.Claims{Status: string(blackbox.Inconclusive), Rules: []evidence.ClaimedRule{}}, nil
	}
	return bbverify.Claims(v.Layer), nil
}

// options loads the profile and checks the flags.
func (af *auditFlags) options(args []string) (audit.Options, error) {
	if af.profile == "" {
		return audit.Options{}, usageErrorf("--profile is required")
	}
	text, err := os.ReadFile(af.profile)
	if err != nil {
		return audit.Options{}, usageErrorf("read the profile: %v", err)
	}
	p, err := profile.Parse(filepath.Base(af.profile), text)
	if err != nil {
		return audit.Options{}, err
	}
	kinds, err := audit.ParseKinds(af.faults)
	if err != nil {
		return audit.Options{}, err
	}
	only, err := nemesis.ParseOnly(af.only)
	if err != nil {
		return audit.Options{}, usageErrorf("%v", err)
	}
	if !strings.HasSuffix(af.out, ".json") {
		return audit.Options{}, usageErrorf("--out %q: want a path ending in .json", af.out)
	}
	if err := os.MkdirAll(filepath.Dir(af.out), 0o755); err != nil {
		return audit.Options{}, usageErrorf("--out %q: %v", af.out, err)
	}
	exe, _ := os.Executable()
	ti := buildInfo()
	if ti.Modified {
		ti.Revision += " (modified)"
	}
	return audit.Options{
		Profile: p, ProfileText: text, ProfileDir: filepath.Dir(af.profile), Seed: af.seed, Duration: af.duration,
		Faults: kinds, Only: only, Out: af.out, Keep: af.keep, Exe: exe, ReadyTimeout: af.ready,
		Tool: evidence.Tool{Name: progName, Version: ti.Version, Revision: ti.Revision, Build: &ti.Build},
		Args: redactArgs(args),
	}, nil
}

// failProfile reports a refused profile one problem a line (exit 2), and
// any other error as fail does.
func failProfile(stderr io.Writer, cmd string, err error) int {
	var pe *profile.Error
	if !errors.As(err, &pe) {
		return fail(stderr, cmd, err)
	}
	fmt.Fprintf(stderr, "%s %s: the profile is not valid (%d problem(s)):\n", progName, cmd, len(pe.Problems))
	for _, line := range strings.Split(pe.Error(), "\n") {
		fmt.Fprintf(stderr, "  %s\n", checks.Printable(line))
	}
	return exitUsage
}

// observation is the one line an audit prints: the figures the witnesses
// give, what the client and the nemesis did, and the verdict.
func observation(res *audit.Result, v *bbverify.Verdict) string {
	var st blackbox.Stats
	lost, pending := 0, 0
	if v.Layer != nil {
		st = v.Layer.Stats
		for _, r := range v.Layer.Rules {
			switch r.ID {
			case blackbox.RuleLostSkipped, blackbox.RuleLostAcked:
				lost += r.Count
			case blackbox.RulePending:
				pending += r.Count
			}
		}
	}
	kinds := make([]string, 0, len(res.Faults))
	for k, n := range res.Faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	faults := "none"
	if len(kinds) > 0 {
		faults = strings.Join(kinds, " ")
	}
	rq := res.Requests
	return fmt.Sprintf("audit %s (profile %s, seed %d): events committed %d, records %d, duplicates %d, effects %d, lost %d, pending %d; "+
		"requests ok %d fail %d unknown %d (%d settled by the binlog); faults %s; restarts %d; %s",
		res.Evidence.Run.ID, res.Evidence.Profile.Name, res.Evidence.Run.Seed, st.Events, st.Records, st.Duplicates, st.Effects, lost, pending,
		rq[evidence.ClientOK], rq[evidence.ClientFailed], rq[evidence.ClientUnknown], st.Unknown, faults, res.Restarts, v.Status)
}

// maxFindings bounds the reasons printed per rule after the observation
// line; 'verify' lists every one.
const maxFindings = 3

// writeFindings prints the rules' summary and, rule by rule, the first
// reasons of each rule that did not pass, then the bundle's own faults.
func writeFindings(w io.Writer, v *bbverify.Verdict) {
	if v.Layer != nil {
		fmt.Fprintf(w, "rules: %s\n", bbverify.RuleSummary(v.Layer.Rules))
		for _, rule := range v.Layer.Rules {
			n := 0
			for _, r := range v.Layer.Reasons {
				if r.Rule != rule.ID {
					continue
				}
				if n++; n <= maxFindings {
					fmt.Fprintf(w, "  %s\n", checks.Printable(r.String()))
				}
			}
			if n > maxFindings {
				fmt.Fprintf(w, "  ... %d more reason(s) of rule %s: 'orderflow-audit verify %s' lists them\n", n-maxFindings, rule.ID, v.Evidence)
			}
		}
	}
	for _, r := range v.Reasons {
		fmt.Fprintf(w, "  %s %s: %s\n", r.Status, r.Rule, checks.Printable(r.Message))
	}
}

// statusLine is the progress line of an audit on a terminal, rewritten in
// place once a second; every other line written through it erases it
// first. It serialises the writes to stderr.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	drawn bool
}

func (b *statusLine) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.erase()
	return b.w.Write(p)
}

func (b *statusLine) erase() {
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.drawn = false
	}
}

func (b *statusLine) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.erase()
}

// draw shows p: the phase and what is left of it, the figures so far.
func (b *statusLine) draw(p audit.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	effects := ""
	if p.Effects >= 0 {
		effects = fmt.Sprintf(", effects %d", p.Effects)
	}
	fmt.Fprintf(b.w, "\r%s, %v left: committed %d, records %d%s, requests %d, faults %d\x1b[K",
		p.Phase, p.Left, p.Committed, p.Records, effects, p.Requests, p.Faults)
	b.drawn = true
}
