package main

import (
	"context"
	"flag"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/bbverify"
	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
	"github.com/orderflow-audit/orderflow-audit/runner/audit"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// explore --profile: the exploration, summary and shrinking of the chaos
// scenario over audits of a profile. A seed is `audit --profile P --seed
// N`; its schedule is audit.Schedule's, so the shrunk schedule replays as
// an audit command with --only-faults and a shorter --duration.

// auditSubject audits a profile once per seed.
type auditSubject struct {
	path string        // the profile's path, as given (the replay names it)
	base audit.Options // the options of every run, seed and schedule aside
}

// chaosOnly are explore's flags that mean nothing to an audit.
var chaosOnly = []string{"orders", "relays", "consumers", "plant"}

// auditSubject checks the flags of explore --profile and loads the
// profile. The configuration carries the audit's duration, fault kinds
// and --only-faults; its Orders stay 0 (the load is the profile's).
func (ef *exploreFlags) auditSubject(fs *flagSet) (*auditSubject, nemesis.Config, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, n := range chaosOnly {
		if set[n] {
			return nil, nemesis.Config{}, usageErrorf("--%s is the chaos scenario's: an audit's load and roles are its profile's "+
				"(plant a bug in a role's command)", n)
		}
	}
	af := auditFlags{profile: ef.profile, out: "audit.json", faults: ef.chaos.faults, only: ef.chaos.only}
	opts, err := af.options(nil)
	if err != nil {
		return nil, nemesis.Config{}, err
	}
	cfg := nemesis.Config{Duration: audit.DefaultDuration, Kinds: opts.Faults, Only: opts.Only}
	if set["duration"] {
		cfg.Duration = ef.chaos.duration
	}
	if cfg.Duration < 500*time.Millisecond || cfg.Duration > audit.MaxDuration {
		return nil, cfg, usageErrorf("--duration %v: want 500ms to %v", cfg.Duration, audit.MaxDuration)
	}
	opts.Verify = auditClaims
	opts.Progress = io.Discard
	return &auditSubject{path: ef.profile, base: opts}, cfg, nil
}

func (*auditSubject) file() string { return "audit.json" }

// options are the audit options of seed with cfg.
func (a *auditSubject) options(seed int64, cfg nemesis.Config) audit.Options {
	o := a.base
	o.Seed, o.Duration, o.Faults, o.Only = seed, cfg.Duration, cfg.Kinds, cfg.Only
	return o
}

func (a *auditSubject) schedule(cfg nemesis.Config) []nemesis.Fault {
	return audit.Schedule(a.options(cfg.Seed, cfg))
}

// replay is the audit command of seed with cfg (defaults left out).
func (a *auditSubject) replay(seed int64, cfg nemesis.Config) string {
	args := []string{"orderflow-audit", "audit", "--profile", shellWord(a.path), "--seed", strconv.FormatInt(seed, 10)}
	if cfg.Duration != audit.DefaultDuration {
		args = append(args, "--duration", cfg.Duration.String())
	}
	if len(cfg.Kinds) == 0 {
		args = append(args, "--faults", "none")
	} else if !slices.Equal(cfg.Kinds, audit.Kinds) {
		kinds := make([]string, len(cfg.Kinds))
		for i, k := range cfg.Kinds {
			kinds[i] = string(k)
		}
		args = append(args, "--faults", strings.Join(kinds, ","))
	}
	if only := nemesis.FormatOnly(cfg.Only); only != "" && len(cfg.Kinds) > 0 {
		args = append(args, "--only-faults", only)
	}
	return strings.Join(args, " ")
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (a *auditSubject) run(ctx context.Context, seed int64, cfg nemesis.Config, out string, res *seedResult) {
	o := a.options(seed, cfg)
	o.Out = out
	o.Args = strings.Fields(strings.TrimPrefix(a.replay(seed, cfg), "orderflow-audit audit "))
	r, err := audit.Run(ctx, o)
	if ctx.Err() != nil {
		res.interrupted = true
		return
	}
	if err != nil {
		res.status, res.why = statusError, oneLineErr(err)
		return
	}
	v, err := bbverify.Verify(context.WithoutCancel(ctx), r.Path, bbverify.Options{HoldMemory: true})
	if err != nil {
		res.status, res.why = statusError, "verify: "+oneLineErr(err)
		return
	}
	res.elapsed = cfg.Duration
	res.metrics = map[string]string{"faults": spec.FormatFaultCounts(r.Faults)}
	if v.Layer != nil {
		st := v.Layer.Stats
		res.events = int64(st.Events)
		res.metrics["events"] = strconv.Itoa(st.Events)
		res.metrics["records"] = strconv.Itoa(st.Records)
		res.metrics["duplicates"] = strconv.Itoa(st.Duplicates)
		res.metrics["effects"] = strconv.Itoa(st.Effects)
		lost := 0
		for _, rr := range v.Layer.Rules {
			if rr.ID == blackbox.RuleLostSkipped || rr.ID == blackbox.RuleLostAcked {
				lost += rr.Count
			}
		}
		res.metrics["lost"] = strconv.Itoa(lost)
	}
	res.status, res.rules, res.why = classifyAudit(v)
}

// classifyAudit turns the witness-only verdict into the seed's: FAIL with
// the failing rules (the layer's and the bundle's own), INCONCLUSIVE with
// the inconclusive ones, else PASS; why is the first reason of the first
// such rule.
func classifyAudit(v *bbverify.Verdict) (string, []string, string) {
	var rules []string
	why := ""
	add := func(id, reason string) {
		if !slices.Contains(rules, id) {
			rules = append(rules, id)
		}
		if why == "" {
			why = reason
		}
	}
	want := v.Status
	if want == blackbox.Pass {
		return statusPass, nil, ""
	}
	if v.Layer != nil {
		for _, r := range v.Layer.Reasons {
			if r.Status == want {
				add(r.Rule, oneLine(r.String()))
			}
		}
		for _, r := range v.Layer.Rules {
			if r.Status == want {
				add(r.ID, r.ID)
			}
		}
	}
	for _, r := range v.Reasons {
		if r.Status == want {
			add(r.Rule, r.Rule+": "+oneLine(r.Message))
		}
	}
	if v.Layer == nil && v.NotRun != "" && why == "" {
		why = "the rules did not run: " + oneLine(v.NotRun)
	}
	slices.Sort(rules)
	if want == blackbox.Fail {
		return statusFail, rules, why
	}
	return statusInconclusive, rules, why
}
