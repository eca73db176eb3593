package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// A seed's verdict.
const (
	statusPass         = "PASS"
	statusFail         = "FAIL"
	statusInconclusive = "INCONCLUSIVE"
	statusError        = "ERROR" // the run could not be made (no verdict)
)

// seedResult is one chaos run and its verification.
type seedResult struct {
	seed        int64
	cfg         nemesis.Config
	status      string
	rules       []string // the failing (or, inconclusive, the inconclusive) rules, sorted
	why         string   // the first reason, one line
	metrics     map[string]string
	events      int64
	elapsed     time.Duration // the chaos scenario's
	wall        time.Duration // the whole run and its verification
	kept        string        // the evidence file kept, if any
	interrupted bool
}

// failed tells whether the seed counts as a failure: with a plant, a
// failure naming one of its rules (it found the bug).
func (r seedResult) failed(plant runner.Plant) bool {
	if r.status != statusFail {
		return false
	}
	if plant == "" {
		return true
	}
	want := plantRules(plant)
	return slices.ContainsFunc(r.rules, func(rule string) bool { return slices.Contains(want, rule) })
}

// eventsPerSecond is the events the actors and the nemesis logged per
// second of the chaos scenario.
func (r seedResult) eventsPerSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.events) / r.elapsed.Seconds()
}

// subject is what explore runs once per seed: the chaos scenario of the
// reference pipeline (chaosSubject), or an audit of a profile
// (auditSubject, exploreaudit.go).
type subject interface {
	// file is the evidence file's name in a seed's directory.
	file() string
	// run runs seed with cfg, its evidence written to out, verifies it
	// and fills res; it sets res.interrupted when ctx ended first.
	run(ctx context.Context, seed int64, cfg nemesis.Config, out string, res *seedResult)
	// schedule is the schedule of faults a run with cfg injects.
	schedule(cfg nemesis.Config) []nemesis.Fault
	// replay is the command that replays seed with cfg.
	replay(seed int64, cfg nemesis.Config) string
}

// runSeed runs the subject with seed in a directory of its own under the
// output directory, verifies it, and keeps the evidence only when it
// failed.
func (x *exploration) runSeed(ctx context.Context, seed int64, cfg nemesis.Config) (res seedResult) {
	cfg.Seed = seed // the schedule is the seed's (the runner sets it too)
	res = seedResult{seed: seed, cfg: cfg}
	t0 := time.Now()
	defer func() { res.wall = time.Since(t0) }()
	dir, err := os.MkdirTemp(x.outDir, ".seed-"+strconv.FormatInt(seed, 10)+"-")
	if err != nil {
		res.status, res.why = statusError, err.Error()
		return res
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	x.subject.run(ctx, seed, cfg, filepath.Join(dir, x.subject.file()), &res)
	if res.status == statusFail && !res.interrupted {
		keep = true
		res.kept = x.keep(dir, seed)
	}
	return res
}

// chaosSubject is the chaos scenario of the reference pipeline.
type chaosSubject struct {
	plant runner.Plant
	exe   string
}

func (chaosSubject) file() string { return "u80.json" }

func (chaosSubject) schedule(cfg nemesis.Config) []nemesis.Fault { return nemesis.Schedule(cfg) }

func (c chaosSubject) replay(seed int64, cfg nemesis.Config) string {
	return "orderflow-audit run " + strings.Join(replayArgs(seed, cfg, c.plant), " ")
}

func (c chaosSubject) run(ctx context.Context, seed int64, cfg nemesis.Config, out string, res *seedResult) {
	args := append(replayArgs(seed, cfg, c.plant), "--out", out)
	ti := buildInfo()
	if ti.Modified {
		ti.Revision += " (modified)"
	}
	ev, err := runner.Run(ctx, runner.Options{
		Scenarios: []string{"chaos"}, Seed: seed, Chaos: cfg, Plant: c.plant, Out: out, Args: args,
		Timeout: runner.ChaosTimeout(cfg), Executable: c.exe, Progress: io.Discard,
		Version: ti.Version, Revision: ti.Revision, Build: &ti.Build,
	})
	if ctx.Err() != nil {
		res.interrupted = true
		return
	}
	if err != nil && ev == nil {
		res.status, res.why = statusError, oneLineErr(err)
		return
	}
	if len(ev.Scenarios) == 1 {
		res.elapsed = time.Duration(ev.Scenarios[0].ElapsedMS) * time.Millisecond
		res.metrics = map[string]string{}
		for _, m := range ev.Scenarios[0].Metrics {
			res.metrics[m.Name] = m.Value
		}
	}
	v, err := checks.Verify(ctx, out, checks.Options{BlackBox: true})
	if ctx.Err() != nil {
		res.interrupted = true
		return
	}
	if err != nil {
		res.status, res.why = statusError, "verify: "+oneLineErr(err)
		return
	}
	res.events = v.Events
	res.status, res.rules, res.why = classify(v)
}

// keep moves a failing seed's bundle to out-dir/seed-N (replacing an older
// one) and returns the evidence file's path.
func (x *exploration) keep(dir string, seed int64) string {
	dst := filepath.Join(x.outDir, "seed-"+strconv.FormatInt(seed, 10))
	_ = os.RemoveAll(dst)
	if err := os.Rename(dir, dst); err != nil {
		return filepath.Join(dir, x.subject.file())
	}
	return filepath.Join(dst, x.subject.file())
}

// classify turns the verifier's verdict into the seed's: FAIL with the
// failing rules, INCONCLUSIVE with the inconclusive ones, else PASS. The
// boundaries a chaos-only run does not select (boundary-not-run) are left
// out: they are about the scripted scenarios, not this run.
func classify(v *checks.Verdict) (string, []string, string) {
	var fails, incs []string
	var firstFail, firstInc string
	for _, r := range v.Reasons {
		if r.Rule == "boundary-not-run" {
			continue
		}
		msg := r.Rule + ": " + oneLine(r.Message)
		if r.Status == checks.Fail {
			if firstFail == "" {
				firstFail = msg
			}
			if !slices.Contains(fails, r.Rule) {
				fails = append(fails, r.Rule)
			}
		} else {
			if firstInc == "" {
				firstInc = msg
			}
			if !slices.Contains(incs, r.Rule) {
				incs = append(incs, r.Rule)
			}
		}
	}
	slices.Sort(fails)
	slices.Sort(incs)
	switch {
	case len(fails) > 0:
		return statusFail, fails, firstFail
	case len(incs) > 0:
		return statusInconclusive, incs, firstInc
	}
	return statusPass, nil, ""
}

// lineMetrics are the figures a seed's line shows, those its run has:
// the chaos scenario's orders, an audit's records, duplicates and lost
// events.
var lineMetrics = []string{"orders", "events", "records", "duplicates", "effects", "lost", "faults"}

// line is the seed's line on stdout.
func (r seedResult) line(plant runner.Plant) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %-5d %-12s %6.1fs", r.seed, r.status, r.wall.Seconds())
	if r.metrics != nil {
		b.WriteString(" ")
		for _, k := range lineMetrics {
			if v, ok := r.metrics[k]; ok {
				fmt.Fprintf(&b, " %s=%s", k, v)
			}
		}
	}
	if r.events > 0 {
		fmt.Fprintf(&b, "  %.0f events/s", r.eventsPerSecond())
	}
	if len(r.rules) > 0 {
		fmt.Fprintf(&b, "  rules=%s", strings.Join(r.rules, ","))
	}
	if plant != "" && r.failed(plant) {
		b.WriteString("  (found the planted bug)")
	}
	if r.kept != "" {
		fmt.Fprintf(&b, "  kept %s", r.kept)
	}
	if r.why != "" && r.status != statusPass {
		why := r.why
		if len(why) > 240 {
			why = why[:240] + "..."
		}
		fmt.Fprintf(&b, "\n           %s", why)
	}
	return b.String()
}

func oneLineErr(err error) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	return oneLine(err.Error())
}

// oneLine joins the lines of a message with "; ".
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
