package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

const exploreAbout = `Runs the chaos scenario once per seed, verifies each, prints a summary, and
shrinks the first failure to the command that replays it.

Runs the chaos scenario once per seed (each run on a private mariadbd and an
embedded broker of its own, as 'run --scenarios chaos --seed N' does), verifies
each evidence with the verifier, and prints one line per seed and a summary
table: seeds, PASS, FAIL, INCONCLUSIVE, faults injected by kind, events/s. A
seed's verdict is the verifier's, leaving out the boundaries a chaos-only run
does not select (boundary-not-run). The evidence of a failing seed is kept in
--out-dir/seed-N/; every other seed's is removed. A failure is shrunk (fewer
faults, fewer orders, a shorter duration, as long as the same rule still
fails in two runs in a row; at most --shrink-runs runs) and the command that replays the smallest
failing schedule is printed on a line of its own, starting with
'orderflow-audit run'. With --plant, a seed counts as finding the bug when it
fails with one of the rules the bug's negative control names.

With --profile FILE, a seed is an audit of that pipeline instead ('audit
--profile FILE --seed N', with --duration, --faults and --only-faults as audit
takes them; the load and the roles are the profile's, so --orders, --relays,
--consumers and --plant are refused: plant a bug in a role's command). Its
verdict is the witness-only verifier's, its bundle is kept in
--out-dir/seed-N/audit.json when it failed, and the shrunk schedule is
printed as the 'orderflow-audit audit' command that replays it (the seed's
schedule with --only-faults and a shorter --duration, as for chaos).

Ctrl-C stops after the running seed's cleanup (no process, temporary
directory or scratch database is left) and prints the summary of the seeds
that finished; a second Ctrl-C exits at once. Exit 0 when every seed passed
(with --plant: when a seed found the bug), 1 on a failure, 4 when a seed was
inconclusive or the exploration was interrupted.`

// exploreFlags are explore's flags.
type exploreFlags struct {
	profile    string
	seeds      string
	plant      string
	stopOnFail bool
	noShrink   bool
	shrinkRuns int
	outDir     string
	progress   string
	chaos      chaosFlags
}

func exploreFlagSet(ef *exploreFlags) *flagSet {
	fs := newFlagSet("explore", "explore [flags]", exploreAbout,
		`orderflow-audit explore --seeds 1..100
orderflow-audit explore --seeds 1..20 --plant mark-without-token --stop-on-fail
orderflow-audit explore --seeds 7 --duration 10s --faults kill,pause
orderflow-audit explore --profile examples/watermill/profile.yaml --seeds 1..20 --faults none`)
	fs.StringVar(&ef.profile, "profile", "", "explore audits of this pipeline's profile (`file`) instead of the chaos scenario:\n'audit --profile FILE --seed N' per seed")
	fs.StringVar(&ef.seeds, "seeds", "1..10", "seeds to run: `N`, N..M or a comma-separated list of both")
	fs.StringVar(&ef.plant, "plant", "", "plant one `BUG` into the system under test in every run (negative control)")
	fs.BoolVar(&ef.stopOnFail, "stop-on-fail", false, "stop at the first failing seed (with --plant: the first that finds the bug)")
	fs.BoolVar(&ef.noShrink, "no-shrink", false, "do not shrink a failure")
	fs.IntVar(&ef.shrinkRuns, "shrink-runs", 20, "at most `n` runs to shrink a failure (a smaller schedule is kept when it fails twice in a row)")
	fs.StringVar(&ef.outDir, "out-dir", filepath.Join("evidence", "explore"), "where the evidence of failing seeds is kept (`dir`/seed-N/u80.json, or audit.json)")
	fs.StringVar(&ef.progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), on or off")
	ef.chaos.register(fs)
	return fs
}

// parseSeeds reads "N", "N..M" and comma-separated lists of them.
func parseSeeds(s string) ([]int64, error) {
	var out []int64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "..")
		a, err := strconv.ParseInt(lo, 10, 64)
		if err != nil || a < 1 {
			return nil, fmt.Errorf("--seeds %q: %q is not a seed (seeds start at 1)", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("--seeds %q: %q is not a range N..M with M >= N", s, part)
			}
		}
		if b-a > 100000 {
			return nil, fmt.Errorf("--seeds %q: at most 100000 seeds", s)
		}
		for n := a; n <= b; n++ {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// exploration is one explore command's state.
type exploration struct {
	subject subject
	cfg     nemesis.Config
	plant   runner.Plant
	outDir  string
	stdout  io.Writer
	stderr  io.Writer
	bar     *progressBar
	results []seedResult
}

func cmdExplore(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var ef exploreFlags
	fs := exploreFlagSet(&ef)
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	x, seeds, err := ef.check(fs, stdout, stderr)
	if err != nil {
		return fail(stderr, "explore", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	x.stdout = &pipeGuard{w: stdout, name: "stdout", cancel: cancel}
	x.stderr = &syncWriter{w: &pipeGuard{w: stderr, name: "stderr", cancel: cancel}}
	if ef.plant != "" {
		fmt.Fprintf(x.stderr, "NEGATIVE CONTROL: planted bug %q in every run\n", ef.plant)
	}
	x.bar = newProgressBar(x.stderr, ef.progress, stderr, len(seeds))
	t0 := time.Now()
	for _, seed := range seeds {
		if ctx.Err() != nil {
			break
		}
		x.bar.start(seed)
		r := x.runSeed(ctx, seed, x.cfg)
		x.bar.clear()
		if r.interrupted {
			break
		}
		x.results = append(x.results, r)
		fmt.Fprintln(x.stdout, r.line(x.plant))
		x.bar.done(r.status)
		if ef.stopOnFail && r.failed(x.plant) {
			break
		}
	}
	x.bar.clear()
	interrupted := ctx.Err() != nil
	x.summary(time.Since(t0), len(seeds), interrupted)
	if first := x.firstFailure(); first != nil && !ef.noShrink && !interrupted {
		x.shrink(ctx, *first, ef.shrinkRuns)
	}
	return x.exitCode(interrupted)
}

// check validates the flags and prepares the exploration.
func (ef *exploreFlags) check(fs *flagSet, stdout, stderr io.Writer) (*exploration, []int64, error) {
	if fs.NArg() > 0 {
		return nil, nil, usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	seeds, err := parseSeeds(ef.seeds)
	if err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	if ef.profile != "" {
		sub, cfg, err := ef.auditSubject(fs)
		if err != nil {
			return nil, nil, err
		}
		if err := ef.checkRest(); err != nil {
			return nil, nil, err
		}
		return &exploration{subject: sub, cfg: cfg, outDir: ef.outDir, stdout: stdout, stderr: stderr}, seeds, nil
	}
	cfg, err := ef.chaos.config()
	if err != nil {
		return nil, nil, err
	}
	bug, err := runner.ParsePlant(ef.plant)
	if err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	if err := ef.checkRest(); err != nil {
		return nil, nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find this program to run the actors from: %w", err)
	}
	return &exploration{subject: chaosSubject{plant: bug, exe: exe}, cfg: cfg, plant: bug, outDir: ef.outDir, stdout: stdout, stderr: stderr},
		seeds, nil
}

// checkRest checks the flags that chaos and audits share and makes the
// output directory.
func (ef *exploreFlags) checkRest() error {
	if ef.shrinkRuns < 0 {
		return usageErrorf("--shrink-runs must not be negative")
	}
	switch ef.progress {
	case "auto", "on", "off":
	default:
		return usageErrorf("--progress %q: want auto, on or off", ef.progress)
	}
	if err := os.MkdirAll(ef.outDir, 0o755); err != nil {
		return usageErrorf("--out-dir %s: %v", ef.outDir, err)
	}
	return nil
}

// firstFailure returns the first seed that failed (with a plant: that
// found the bug).
func (x *exploration) firstFailure() *seedResult {
	for i := range x.results {
		if x.results[i].failed(x.plant) {
			return &x.results[i]
		}
	}
	return nil
}

// exitCode: 1 on a failure (with a plant: when no seed found the bug), 4
// when interrupted or a seed was inconclusive, else 0.
func (x *exploration) exitCode(interrupted bool) int {
	found, inconclusive, failed := false, false, false
	for _, r := range x.results {
		found = found || r.failed(x.plant)
		failed = failed || r.status == statusFail
		inconclusive = inconclusive || r.status == statusInconclusive || r.status == statusError
	}
	switch {
	case x.plant != "" && found:
		return exitOK
	case x.plant != "" && interrupted:
		return exitInconclusive
	case x.plant != "":
		return exitFail
	case failed:
		return exitFail
	case interrupted, inconclusive:
		return exitInconclusive
	}
	return exitOK
}

// replayArgs are the flags of `orderflow-audit run` that replay seed with
// cfg (and the plant).
func replayArgs(seed int64, cfg nemesis.Config, plant runner.Plant) []string {
	args := []string{"--scenarios", "chaos", "--seed", strconv.FormatInt(seed, 10)}
	args = append(args, runner.ChaosArgs(cfg)...)
	if plant != "" {
		args = append(args, "--plant", string(plant))
	}
	return args
}

// plantRules are the rules that catch bug (spec.Plants).
func plantRules(bug runner.Plant) []string {
	p, ok := spec.LookupPlant(string(bug))
	if !ok {
		return nil
	}
	return p.Rules()
}
