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

// runSeed runs the chaos scenario with seed in a directory of its own
// under the output directory, verifies it, and keeps the evidence only
// when it failed.
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
	out := filepath.Join(dir, "u80.json")
	args := append(replayArgs(seed, cfg, x.plant), "--out", out)
	ti := buildInfo()
	if ti.Modified {
		ti.Revision += " (modified)"
	}
	ev, err := runner.Run(ctx, runner.Options{
		Scenarios: []string{"chaos"}, Seed: seed, Chaos: cfg, Plant: x.plant, Out: out, Args: args,
		Timeout: runner.ChaosTimeout(cfg), Executable: x.exe, Progress: io.Discard,
		Version: ti.Version, Revision: ti.Revision, Build: &ti.Build,
	})
	if ctx.Err() != nil {
		res.interrupted = true
		return res
	}
	if err != nil && ev == nil {
		res.status, res.why = statusError, oneLineErr(err)
		return res
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
		return res
	}
	if err != nil {
		res.status, res.why = statusError, "verify: "+oneLineErr(err)
		return res
	}
	res.events = v.Events
	res.status, res.rules, res.why = classify(v)
	if res.status == statusFail {
		keep = true
		res.kept = x.keep(dir, seed)
	}
	return res
}

// keep moves a failing seed's bundle to out-dir/seed-N (replacing an older
// one) and returns the evidence file's path.
func (x *exploration) keep(dir string, seed int64) string {
	dst := filepath.Join(x.outDir, "seed-"+strconv.FormatInt(seed, 10))
	_ = os.RemoveAll(dst)
	if err := os.Rename(dir, dst); err != nil {
		return filepath.Join(dir, "u80.json")
	}
	return filepath.Join(dst, "u80.json")
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

// line is the seed's line on stdout.
func (r seedResult) line(plant runner.Plant) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %-5d %-12s %6.1fs", r.seed, r.status, r.wall.Seconds())
	if r.metrics != nil {
		fmt.Fprintf(&b, "  orders=%s events=%s effects=%s faults=%s", r.metrics["orders"], r.metrics["events"],
			r.metrics["effects"], r.metrics["faults"])
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
