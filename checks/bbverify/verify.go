// Package bbverify verifies the bundle of a black-box audit
// (evidence.BlackBox, docs/blackbox.md): it reads the bundle through the
// gate (evidence/audit), runs the witness-only rules (checks/blackbox)
// under the profile found in the bundle, holds the bundle's claims
// against what they recompute, and returns one verdict with every reason.
//
// The steps, each a function of its own:
//
//  1. Read: the evidence against schemas/blackbox.schema.json; the
//     profile, the witnesses, the client's history and the roles' output
//     through the gate, each of its recorded size and sha256 and beneath
//     the bundle's directory, nothing unlisted beside them (a fault is a
//     FAIL, named as the reference's witness faults are).
//  2. layer: the rules over the binlog cut to the run window, the broker's
//     log from the window's start offsets, the client's history, with the
//     liveness bound the evidence records.
//  3. bounds: the recorded bound is no longer than the profile promises;
//     the window audited something.
//  4. claims: the verdict the audit printed is the one recomputed.
package bbverify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/audit"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// Kind is the value of Verdict.Kind.
const Kind = "black-box"

// Options configure Verify.
type Options struct {
	// Now stamps the verdict. Default: time.Now.
	Now func() time.Time
	// HoldMemory holds the heap near a soft limit while the bundle is
	// checked, unless GOMEMLIMIT sets one: MemoryLimit of its binlog's
	// size. The garbage collector then works harder as the heap nears
	// it, rather than let the heap grow to twice what is live. The limit
	// is the process's (runtime/debug.SetMemoryLimit), restored after;
	// the commands set it.
	HoldMemory bool
}

// MemoryLimit is the soft limit HoldMemory sets for a binlog of
// binlogBytes: 3.5 bytes of heap a byte, at least 256 MiB. The model of
// a million events (4,000,000 row changes in 135 MB of binlog) holds
// about 400 MB live at its largest (BENCHMARKS.md): 450 MiB keeps the
// process under 500 MB. A bundle that needs more than its limit is
// checked all the same, more slowly (the collector takes at most half
// the CPU).
func MemoryLimit(binlogBytes int64) int64 {
	return max(256<<20, binlogBytes*7/2)
}

// Verdict is the verdict on a black-box audit's bundle.
type Verdict struct {
	// Kind is "black-box": the --json output tells the two kinds of
	// verdict apart by it.
	Kind      string            `json:"kind"`
	Status    blackbox.Status   `json:"status"`
	Evidence  string            `json:"evidence"`
	RunID     string            `json:"run_id"`
	Profile   ProfileRef        `json:"profile"`
	Target    evidence.Target   `json:"target"`
	Window    evidence.Window   `json:"window"`
	Liveness  evidence.Liveness `json:"liveness"`
	CheckedAt time.Time         `json:"checked_at"`
	// ClientRequests is the number of requests of the client's history;
	// nil when the bundle has none (ClientMissing says why).
	ClientRequests *int   `json:"client_requests"`
	ClientMissing  string `json:"client_missing,omitempty"`
	// Outputs counts the roles' captured output files (verified, never
	// read: what the pipeline says of itself is no basis of the verdict).
	Outputs int `json:"outputs"`
	// Reasons are the bundle's own faults and checks: its files, its
	// window, its bound, its claims. The rules' findings are in Layer.
	Reasons []Reason `json:"reasons"`
	// Layer is the witness-only rules' result; nil when they could not
	// run (NotRun says why).
	Layer  *blackbox.Result `json:"layer"`
	NotRun string           `json:"not_run,omitempty"`
}

// Unpassed maps every rule and bundle check that did not pass (nor was
// not applicable) to its status: what a verdict says went wrong, in the
// form a history's expected outcome is written in.
func (v *Verdict) Unpassed() map[string]string {
	got := map[string]string{}
	if v.Layer != nil {
		for _, r := range v.Layer.Rules {
			if r.Status != blackbox.Pass && r.Status != blackbox.NotApplicable {
				got[r.ID] = string(r.Status)
			}
		}
	}
	for _, r := range v.Reasons {
		got[r.Rule] = string(r.Status)
	}
	return got
}

// ProfileRef names the profile the audit ran under.
type ProfileRef struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// About is the profile's own description of the pipeline (read from
	// the bundle's profile; nil when it has none or could not be read).
	About *profile.About `json:"about,omitempty"`
}

// Reason is one finding about the bundle itself.
type Reason struct {
	Rule       string          `json:"rule"`
	Status     blackbox.Status `json:"status"`
	Path       string          `json:"path,omitempty"`
	Field      string          `json:"field,omitempty"`
	Claimed    string          `json:"claimed,omitempty"`
	Recomputed string          `json:"recomputed,omitempty"`
	Message    string          `json:"message"`
}

// Verify verifies the black-box audit's evidence file at path. It returns
// an error only when it cannot check at all: the file is not such
// evidence, or the profile in the bundle is not a valid profile (both wrap
// evidence.ErrBadInput), or ctx ended.
func Verify(ctx context.Context, path string, opt Options) (*Verdict, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	b, err := audit.Read(ctx, path)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if _, set := os.LookupEnv("GOMEMLIMIT"); opt.HoldMemory && !set && b.Binlog != nil {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(MemoryLimit(b.Binlog.Size())))
	}
	bb := b.Evidence
	v := &Verdict{Kind: Kind, Evidence: path, RunID: bb.Run.ID, Target: bb.Target, Window: bb.Window, Liveness: bb.Liveness,
		Profile:   ProfileRef{Name: bb.Profile.Name, Path: bb.Profile.Path, SHA256: bb.Profile.SHA256},
		CheckedAt: opt.Now().UTC(), ClientMissing: bb.Client.Missing, Outputs: len(bb.Roles), Reasons: []Reason{}}
	if b.Client != nil {
		n := len(b.Client)
		v.ClientRequests = &n
	}
	if b.Profile != nil {
		v.Profile.About = b.Profile.About
	}
	files(v, b)
	layer(v, b)
	bounds(v, b)
	claims(v, bb.Claims)
	v.Status = status(v)
	return v, nil
}

// files turns the bundle's faults into reasons (step 1): each a FAIL, and
// a witness the evidence lists as missing INCONCLUSIVE (a black-box
// verdict rests on the witnesses alone).
func files(v *Verdict, b *audit.Bundle) {
	for _, p := range b.Problems {
		v.Reasons = append(v.Reasons, Reason{Rule: p.Rule, Status: blackbox.Fail, Path: p.Path, Field: p.Field,
			Claimed: p.Claimed, Recomputed: p.Recomputed, Message: p.Message})
	}
	for _, m := range b.Missing {
		v.Reasons = append(v.Reasons, Reason{Rule: "witness-missing", Status: blackbox.Inconclusive,
			Message: "not witnessed: " + m + "; a black-box verdict rests on the witnesses alone"})
	}
}

// layer runs the witness-only rules (step 2) when the profile and the
// binlog were had.
func layer(v *Verdict, b *audit.Bundle) {
	switch {
	case b.Profile == nil:
		v.NotRun = "the profile in the bundle could not be read (see the reasons)"
		return
	case b.Binlog == nil:
		v.NotRun = "the binlog witness could not be had (see the reasons)"
		return
	}
	bound, _ := b.Evidence.Liveness.Duration() // ParseBlackBox checked it
	res, err := blackbox.Check(blackbox.Input{Profile: b.Profile, Scan: b.Binlog.Scan, Schema: b.Evidence.Target.Database,
		Broker: b.Broker, Topic: b.Evidence.Target.Topic, BrokerStart: b.BrokerStart, Client: b.Client,
		End: b.Evidence.Liveness.SettledAt, Liveness: bound, Holes: b.Holes, Unsettled: b.Evidence.Run.Interrupted})
	if dmg := (*audit.DamagedError)(nil); errors.As(err, &dmg) {
		// The binlog's files passed the gate, but it cannot be read to
		// its end: a fault of the bundle, reported where Read reports the
		// others (after those found before, ahead of the missing ones).
		p := dmg.Problem
		b.Problems = append(b.Problems, p)
		at := len(b.Problems) - 1
		v.Reasons = slices.Insert(v.Reasons, at, Reason{Rule: p.Rule, Status: blackbox.Fail, Path: p.Path, Message: p.Message})
		v.NotRun = "the binlog witness could not be had (see the reasons)"
		return
	}
	if err != nil {
		v.NotRun = err.Error()
		v.Reasons = append(v.Reasons, Reason{Rule: "layer", Status: blackbox.Inconclusive, Message: "the rules could not run: " + err.Error()})
		return
	}
	v.Layer = res
	if b.Evidence.Run.Interrupted {
		v.Reasons = append(v.Reasons, Reason{Rule: "run-interrupted", Status: blackbox.Inconclusive,
			Message: "the audit was interrupted before the pipeline settled: what only settling would have shown " +
				"(pending events, a group's lag, effects still to come) is inconclusive, and the verdict is at best INCONCLUSIVE"})
	}
}

// bounds holds the evidence's liveness bound to the profile's promise and
// refuses an audit of nothing (step 3).
func bounds(v *Verdict, b *audit.Bundle) {
	if b.Profile != nil {
		bound, _ := b.Evidence.Liveness.Duration()
		if promised := time.Duration(b.Profile.Promises.Liveness); bound > promised {
			v.Reasons = append(v.Reasons, Reason{Rule: "liveness-bound", Status: blackbox.Fail, Field: "liveness.bound",
				Claimed: b.Evidence.Liveness.Bound, Recomputed: evidence.FormatBound(promised),
				Message: fmt.Sprintf("the evidence records a liveness bound of %s, longer than the %s the profile promises: "+
					"the pending rule would give the pipeline more time than it promised", b.Evidence.Liveness.Bound, evidence.FormatBound(promised))})
		}
	}
	if v.Layer != nil && v.Layer.Stats.Events == 0 && v.Layer.Stats.Records == 0 {
		v.Reasons = append(v.Reasons, Reason{Rule: "nothing-audited", Status: blackbox.Inconclusive,
			Message: fmt.Sprintf("the run window holds no committed event of topic %s in database %s and no record on it: nothing was audited",
				v.Target.Topic, v.Target.Database)})
	}
}

// claims holds the verdict the audit printed against the one recomputed
// (step 4): the rules' status and number of reasons, and the overall
// status of the rules. Checked only when the rules ran.
func claims(v *Verdict, c evidence.Claims) {
	if v.Layer == nil {
		return
	}
	mismatch := func(field, claimed, got, format string, args ...any) {
		v.Reasons = append(v.Reasons, Reason{Rule: "claims", Status: blackbox.Fail, Field: field, Claimed: claimed, Recomputed: got,
			Message: fmt.Sprintf(format, args...)})
	}
	if c.Status != string(v.Layer.Status) {
		mismatch("claims.status", c.Status, string(v.Layer.Status), "the bundle claims the rules' verdict was %s; the witnesses give %s", c.Status, v.Layer.Status)
	}
	claimed := map[string]evidence.ClaimedRule{}
	for _, r := range c.Rules {
		claimed[r.ID] = r
	}
	for _, r := range v.Layer.Rules {
		cr, ok := claimed[r.ID]
		delete(claimed, r.ID)
		switch {
		case !ok:
			mismatch("claims.rules", "", string(r.Status), "the bundle claims nothing of rule %s, which gives %s", r.ID, r.Status)
		case cr.Status != string(r.Status) || cr.Count != r.Count:
			mismatch("claims.rules."+r.ID, fmt.Sprintf("%s (%d)", cr.Status, cr.Count), fmt.Sprintf("%s (%d)", r.Status, r.Count),
				"the bundle claims rule %s gave %s with %d reason(s); the witnesses give %s with %d", r.ID, cr.Status, cr.Count, r.Status, r.Count)
		}
	}
	for _, r := range c.Rules {
		if _, left := claimed[r.ID]; left {
			mismatch("claims.rules."+r.ID, r.Status, "", "the bundle claims a verdict of rule %s, which the verifier does not have", r.ID)
		}
	}
}

// status is the worst of the reasons and the rules; with no rules run,
// at best INCONCLUSIVE.
func status(v *Verdict) blackbox.Status {
	st := blackbox.Pass
	if v.Layer == nil {
		st = blackbox.Inconclusive
	} else {
		st = worse(st, v.Layer.Status)
	}
	for _, r := range v.Reasons {
		st = worse(st, r.Status)
	}
	return st
}

func worse(a, b blackbox.Status) blackbox.Status {
	rank := map[blackbox.Status]int{blackbox.NotApplicable: 0, blackbox.Pass: 1, blackbox.Inconclusive: 2, blackbox.Fail: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Claims returns the claims a bundle writer records for res: the rules'
// verdict as the verifier will recompute it.
func Claims(res *blackbox.Result) evidence.Claims {
	c := evidence.Claims{Status: string(res.Status), Rules: []evidence.ClaimedRule{}}
	for _, r := range res.Rules {
		c.Rules = append(c.Rules, evidence.ClaimedRule{ID: r.ID, Status: string(r.Status), Count: r.Count})
	}
	return c
}
