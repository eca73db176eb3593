package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/invariants"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Options configure Verify.
type Options struct {
	// MySQLDSN, when set, loads each scenario's replayed end state into a
	// scratch database ofa_verify_<random> on that MySQL/MariaDB server,
	// dropped afterwards. Empty (the default): an embedded, in-memory
	// SQLite engine, so that verifying needs no server.
	MySQLDSN string
	// Now stamps the verdict. Default: time.Now.
	Now func() time.Time
	// Workers is how many goroutines decode event lines. Default:
	// runtime.GOMAXPROCS(0).
	Workers int
}

func (o *Options) setDefaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
}

// Verify re-derives every claim of the evidence file at path from its
// event logs and returns the verdict with every reason. It returns an error
// only when it could not check at all: the file is not evidence (the error
// wraps evidence.ErrBadInput), the MySQL server of Options.MySQLDSN is
// unavailable (wraps ErrUnavailable), or ctx ended.
func Verify(ctx context.Context, path string, opt Options) (*Verdict, error) {
	opt.setDefaults()
	ev, _, err := evidence.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: resolve the directory of %s: %v", evidence.ErrBadInput, path, err)
	}
	invs, err := invariants.All()
	if err != nil {
		return nil, err
	}
	var eng *engine
	if opt.MySQLDSN != "" {
		eng, err = openMySQL(ctx, opt.MySQLDSN, ev.Run.ID)
	} else {
		eng, err = openSQLite(ctx)
	}
	if err != nil {
		return nil, err
	}
	pool := newDecoderPool(opt.Workers)
	defer pool.close()

	v := &Verdict{
		Evidence: path, RunID: ev.Run.ID, Engine: eng.name, Scenarios: len(ev.Scenarios),
		Planted: ev.Run.Planted, CheckedAt: opt.Now().UTC(), Reasons: []Reason{}, Invariants: []InvariantCheck{},
	}
	c := &checker{
		v: v, ev: ev, dir: dir, realDir: realDir, invs: invs, eng: eng, pool: pool,
		logOwners: map[string]string{}, seen: map[string]bool{},
	}
	c.evidenceLevel()
	for i := range ev.Scenarios {
		if err := c.scenario(ctx, &ev.Scenarios[i]); err != nil {
			_ = eng.close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("verify %s: %w", path, err)
		}
	}
	c.negativeControl()
	if err := eng.close(context.WithoutCancel(ctx)); err != nil {
		v.Warnings = append(v.Warnings, "closing the SQL engine: "+err.Error())
	}
	v.Status = Pass
	for _, r := range v.Reasons {
		if r.Status == Fail {
			v.Status = Fail
			break
		}
		v.Status = Inconclusive
	}
	return v, nil
}

type checker struct {
	v         *Verdict
	ev        *evidence.Evidence
	dir       string
	realDir   string
	invs      []invariants.Invariant
	eng       *engine
	pool      *decoderPool
	logOwners map[string]string // resolved log path -> scenario
	seen      map[string]bool   // scenario ids
	// args is what run.args say; argsOK is false when they cannot be
	// read (see selection).
	args   runArgs
	argsOK bool
	// truncated is set while checking a scenario one of whose logs was
	// cut: end-state comparisons may then be explained by the lost tail,
	// so they are inconclusive instead of failures.
	truncated bool
}

// endState adds a finding about the replayed end state or a recomputed
// claim: a failure, or inconclusive when a log of the scenario was cut.
func (c *checker) endState(r Reason) {
	if c.truncated && r.Status == Fail {
		r.Status = Inconclusive
		r.Message += " (a log of this scenario was cut: the lost events may explain it)"
	}
	c.add(r)
}

func (c *checker) add(r Reason) { c.v.Reasons = append(c.v.Reasons, r) }

func (c *checker) fail(scenario, rule, format string, args ...any) {
	c.add(Reason{Rule: rule, Status: Fail, Scenario: scenario, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) inconclusive(scenario, rule, format string, args ...any) {
	c.add(Reason{Rule: rule, Status: Inconclusive, Scenario: scenario, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) mismatch(scenario, rule, field, claimed, recomputed, format string, args ...any) {
	c.add(Reason{Rule: rule, Status: Fail, Scenario: scenario, Field: field, Claimed: claimed, Recomputed: recomputed,
		Message: fmt.Sprintf(format, args...)})
}

// evidenceLevel checks what the file claims about the run as a whole.
func (c *checker) evidenceLevel() {
	ev := c.ev
	if ev.Run.Interrupted {
		c.inconclusive("", "run-interrupted", "the run was interrupted before every selected scenario finished: "+
			"what did not run cannot be concluded")
	}
	c.selection()
	if ev.Run.End.Before(ev.Run.Start) {
		c.mismatch("", "time-outside-run", "run.end", ev.Run.End.Format(time.RFC3339Nano), "not before "+ev.Run.Start.Format(time.RFC3339Nano),
			"the run ends before it starts: its times were edited, so the events' times cannot be checked against them")
	}
	want := evidence.Summarize(ev.Scenarios)
	for _, f := range []struct {
		name        string
		claim, want int
	}{
		{"total", ev.Summary.Total, want.Total}, {"passed", ev.Summary.Passed, want.Passed},
		{"failed", ev.Summary.Failed, want.Failed}, {"not_run", ev.Summary.NotRun, want.NotRun},
	} {
		if f.claim != f.want {
			c.mismatch("", "summary-mismatch", "summary."+f.name, strconv.Itoa(f.claim), strconv.Itoa(f.want),
				"summary.%s says %d; the scenarios listed give %d", f.name, f.claim, f.want)
		}
	}
	wantB := evidence.ComputeBoundaries(ev.Scenarios)
	for i := 0; i < max(len(wantB), len(ev.Boundaries)); i++ {
		switch {
		case i >= len(ev.Boundaries):
			c.mismatch("", "boundary-mismatch", "boundaries["+wantB[i].Boundary+"]", "", wantB[i].Boundary,
				"the boundary table lacks the %s row", wantB[i].Boundary)
		case i >= len(wantB):
			c.mismatch("", "boundary-mismatch", "boundaries["+ev.Boundaries[i].Boundary+"]", ev.Boundaries[i].Boundary, "",
				"the boundary table has an extra row %s", ev.Boundaries[i].Boundary)
		case ev.Boundaries[i] != wantB[i]:
			got, w := ev.Boundaries[i], wantB[i]
			c.mismatch("", "boundary-mismatch", "boundaries["+w.Boundary+"]", boundaryText(got), boundaryText(w),
				"row %d of the boundary table is not what the scenarios give (%s)", i+1, diffBoundary(got, w))
		}
	}
	wantP := evidence.ComputeProofBoundary(ev)
	for i := 0; i < max(len(wantP), len(ev.ProofBoundary)); i++ {
		var got, w evidence.ProofRow
		if i < len(ev.ProofBoundary) {
			got = ev.ProofBoundary[i]
		}
		if i < len(wantP) {
			w = wantP[i]
		}
		if got.Category != w.Category || !equalStrings(got.Had, w.Had) || !equalStrings(got.CannotInfer, w.CannotInfer) {
			cat := w.Category
			if cat == "" {
				cat = got.Category
			}
			field, claimed, want := firstDiff(got, w)
			c.mismatch("", "proof-boundary-mismatch", "proof_boundary["+cat+"]."+field, claimed, want,
				"the proof-boundary row %q is not what this verifier derives from the evidence (evidence.ComputeProofBoundary). "+
					"The evidence may have been written by another version of the tool (it says %s %s, revision %s), which words "+
					"the matrix differently: regenerate it with this version (orderflow-audit run) and verify again. "+
					"Until then it fails, as a hand-edited matrix would", cat, ev.Tool.Name, ev.Tool.Version, ev.Tool.Revision)
		}
	}
}

// firstDiff names the first entry where two proof rows differ.
func firstDiff(a, b evidence.ProofRow) (field, x, y string) {
	if a.Category != b.Category {
		return "category", a.Category, b.Category
	}
	for _, l := range []struct {
		name string
		a, b []string
	}{{"had", a.Had, b.Had}, {"cannot_infer", a.CannotInfer, b.CannotInfer}} {
		for i := 0; i < max(len(l.a), len(l.b)); i++ {
			var p, q string
			if i < len(l.a) {
				p = l.a[i]
			}
			if i < len(l.b) {
				q = l.b[i]
			}
			if p != q {
				return fmt.Sprintf("%s[%d]", l.name, i), p, q
			}
		}
	}
	return "", "", ""
}

func equalStrings(a, b []string) bool { return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b)) }

func boundaryText(b evidence.Boundary) string {
	return b.Scenario + " " + b.Status + " " + b.Figures
}

func diffBoundary(a, b evidence.Boundary) string {
	var d []string
	for _, f := range []struct{ name, a, b string }{
		{"boundary", a.Boundary, b.Boundary}, {"injection", a.Injection, b.Injection}, {"recovery", a.Recovery, b.Recovery},
		{"accepted_when", a.AcceptedWhen, b.AcceptedWhen}, {"scenario", a.Scenario, b.Scenario},
		{"status", a.Status, b.Status}, {"figures", a.Figures, b.Figures},
	} {
		if f.a != f.b {
			d = append(d, fmt.Sprintf("%s %q, want %q", f.name, f.a, f.b))
		}
	}
	return strings.Join(d, "; ")
}

// timeTolerance is how far an event's time may lie outside [run.start,
// run.end]: the runner stamps the run and each actor stamps its events
// with its own reading of the clock (actors may be other processes), so
// the two need not agree to the nanosecond.
const timeTolerance = 2 * time.Second

func runWindow(r evidence.Run) string {
	return fmt.Sprintf("%s to %s, ±%s", r.Start.Format(time.RFC3339Nano), r.End.Format(time.RFC3339Nano), timeTolerance)
}

// maxPerLogRule bounds the reasons of one rule for one log; the rest are
// counted in one closing reason.
const maxPerLogRule = 10

// scenarioRun collects one scenario's per-log findings with their caps.
type scenarioRun struct {
	c       *checker
	id      string
	counts  map[[2]string]int
	overCap map[[2]string]int
	order   [][2]string
}

func (s *scenarioRun) logReason(r Reason) {
	k := [2]string{r.Rule, r.Log}
	if s.counts[k] >= maxPerLogRule {
		if s.overCap[k] == 0 {
			s.order = append(s.order, k)
		}
		s.overCap[k]++
		return
	}
	s.counts[k]++
	r.Scenario = s.id
	s.c.add(r)
}

func (s *scenarioRun) flush() {
	for _, k := range s.order {
		n := s.overCap[k]
		st := Fail
		if k[0] == "log-truncated" {
			st = Inconclusive
		}
		s.c.add(Reason{Rule: k[0], Status: st, Scenario: s.id, Log: k[1],
			Message: fmt.Sprintf("%d more %s finding(s) in this log, not listed", n, k[0])})
	}
}

func (c *checker) scenario(ctx context.Context, sc *evidence.Scenario) error {
	id := sc.ID
	if c.seen[id] {
		c.fail(id, "scenario-duplicate", "scenario %s is listed twice", id)
	}
	c.seen[id] = true
	s, known := spec.Lookup(id)
	d, derived := derivations[id]
	known = known && derived
	if known {
		c.sameAsSpec(sc, s)
	}
	if want := evidence.FormatLine(sc.Suite, sc.ID, sc.Status, sc.Metrics); sc.Line != want {
		c.mismatch(id, "line-mismatch", "line", sc.Line, want, "the observation line does not say what the scenario's status and metrics say")
	}
	if sc.Status == evidence.StatusNotRun {
		c.inconclusive(id, "scenario-not-run", "scenario %s did not run (%s): nothing about it can be concluded", id,
			orDefault(sc.Reason, "no reason given"))
		if len(sc.Logs) == 0 && len(sc.Metrics) == 0 && len(sc.Invariants) == 0 && len(sc.Tables) == 0 {
			return nil
		}
	}
	if !known {
		c.inconclusive(id, "scenario-unknown", "the verifier does not know scenario %s: its metrics and status cannot be recomputed "+
			"(its logs, replay rules, invariants and table digests are still checked)", id)
	}

	m := model.New(spec.Layers, sc.FaultPoints) // every layer, until the evidence says which apply
	run := &scenarioRun{c: c, id: id, counts: map[[2]string]int{}, overCap: map[[2]string]int{}}
	truncated, err := c.replay(ctx, sc, m, run)
	if err != nil {
		return err
	}
	m.Finish(truncated)
	m.Release()
	c.truncated = truncated
	defer func() { c.truncated = false }()
	c.v.Events += m.Events()
	vs, more := m.Violations()
	for _, x := range vs {
		c.add(Reason{Rule: string(x.Rule), Status: violationStatus(x), Scenario: id, Log: x.Source.Log, Seq: x.Source.Seq,
			Line: x.Source.Line, Message: x.Message})
	}
	for _, rule := range sortedKeys(more) {
		c.fail(id, string(rule), "%d more %s violation(s), not listed", more[rule], rule)
	}
	run.flush()

	c.liveInvariantEvents(sc, m, truncated)
	inv := c.sqlChecks(ctx, sc, m)
	if known {
		c.metrics(sc, s, d, facts{m: m, inv: inv})
	}
	if sc.Status == evidence.StatusFail {
		c.fail(id, "scenario-failed", "the runner reports scenario %s failed: %s", id, orDefault(sc.Reason, "no reason given"))
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// replay reads the scenario's logs, checks their integrity and folds their
// events, merged by time, into m. It reports whether a log was cut.
func (c *checker) replay(ctx context.Context, sc *evidence.Scenario, m *Model, run *scenarioRun) (bool, error) {
	var reads []*logRead
	for i, ref := range sc.Logs {
		abs, real, err := resolveLog(c.dir, c.realDir, ref.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			run.logReason(Reason{Rule: "log-missing", Status: Fail, Log: ref.Path,
				Message: fmt.Sprintf("the event log %s of %s does not exist next to the evidence file", ref.Path, ref.Actor)})
			continue
		case err != nil:
			run.logReason(Reason{Rule: "log-path", Status: Fail, Log: ref.Path, Message: "rejected log path: " + err.Error()})
			continue
		}
		if owner, dup := c.logOwners[real]; dup {
			if owner == sc.ID {
				run.logReason(Reason{Rule: "log-duplicate", Status: Fail, Log: ref.Path,
					Message: "the same log is referenced twice by this scenario: its events would count twice"})
				continue
			}
			run.logReason(Reason{Rule: "log-shared", Status: Fail, Log: ref.Path,
				Message: "this log is also referenced by scenario " + owner})
		}
		c.logOwners[real] = sc.ID
		reads = append(reads, &logRead{idx: i, ref: ref, abs: abs, out: make(chan *lineBatch, batchQueue), done: make(chan struct{})})
	}
	rctx, cancel := context.WithCancel(ctx)
	for _, lr := range reads {
		go lr.read(rctx, c.pool)
	}
	defer func() {
		cancel()
		for _, lr := range reads {
			<-lr.done
		}
	}()

	type logState struct {
		prevSeq, prevLine int64
		lastTime          time.Time
	}
	cursors := make([]*logCursor, len(reads))
	states := make([]logState, len(reads))
	for i, lr := range reads {
		cursors[i] = &logCursor{lr: lr}
	}
	onProblem := func(lr *logRead, p batchProblem) {
		rule := "event-schema"
		msg := "line is not a valid event: " + p.prob.String()
		if p.prob.decode != "" {
			rule = "event-decode"
			msg = "line " + p.prob.decode
		}
		run.logReason(Reason{Rule: rule, Status: Fail, Log: lr.ref.Path, Line: p.line, Message: msg})
	}
	runID := c.ev.Run.ID
	lo, hi := c.ev.Run.Start.Add(-timeTolerance), c.ev.Run.End.Add(timeTolerance)
	checkRunTimes := !c.ev.Run.End.Before(c.ev.Run.Start) // else evidenceLevel failed the run's own times
	var n int64
	for {
		var best *parsedEvent
		bi := -1
		for i, cur := range cursors {
			h, err := cur.head(ctx, onProblem)
			if err != nil {
				return false, err
			}
			if h != nil && (best == nil || h.ev.Time.Before(best.ev.Time)) {
				best, bi = h, i
			}
		}
		if best == nil {
			break
		}
		cursors[bi].pos++
		st := &states[bi]
		path := reads[bi].ref.Path
		e := &best.ev
		switch {
		case e.Seq <= st.prevSeq:
			run.logReason(Reason{Rule: "seq-order", Status: Fail, Log: path, Seq: e.Seq, Line: best.line,
				Message: fmt.Sprintf("seq %d after seq %d: events reordered or duplicated", e.Seq, st.prevSeq)})
		case e.Seq != st.prevSeq+1 && best.line == st.prevLine+1:
			run.logReason(Reason{Rule: "seq-gap", Status: Fail, Log: path, Seq: e.Seq, Line: best.line,
				Message: fmt.Sprintf("seq jumps from %d to %d: an event line is missing", st.prevSeq, e.Seq)})
		}
		if e.RunID != runID {
			run.logReason(Reason{Rule: "run-id", Status: Fail, Log: path, Seq: e.Seq, Line: best.line, Field: "run_id",
				Claimed: runID, Recomputed: e.RunID, Message: fmt.Sprintf("event of run %q in the evidence of run %q", e.RunID, runID)})
		}
		if e.Scenario != sc.ID {
			run.logReason(Reason{Rule: "log-scenario", Status: Fail, Log: path, Seq: e.Seq, Line: best.line, Field: "scenario",
				Claimed: sc.ID, Recomputed: e.Scenario,
				Message: fmt.Sprintf("event of scenario %q in a log that scenario %q references", e.Scenario, sc.ID)})
		}
		if actor := reads[bi].ref.Actor; e.Actor != actor {
			run.logReason(Reason{Rule: "log-actor", Status: Fail, Log: path, Seq: e.Seq, Line: best.line, Field: "actor",
				Claimed: actor, Recomputed: e.Actor,
				Message: fmt.Sprintf("event of actor %q in the log the evidence lists as %q's: logs swapped or relabelled", e.Actor, actor)})
		}
		if e.Time.Before(st.lastTime) {
			run.logReason(Reason{Rule: "time-order", Status: Fail, Log: path, Seq: e.Seq, Line: best.line, Field: "time",
				Claimed: e.Time.Format(time.RFC3339Nano), Recomputed: "not before " + st.lastTime.Format(time.RFC3339Nano),
				Message: fmt.Sprintf("time goes back %s from the line before: an actor logs its events as they happen, "+
					"so its log is in time order; this event was moved", st.lastTime.Sub(e.Time))})
		}
		if checkRunTimes && (e.Time.Before(lo) || e.Time.After(hi)) {
			run.logReason(Reason{Rule: "time-outside-run", Status: Fail, Log: path, Seq: e.Seq, Line: best.line, Field: "time",
				Claimed: e.Time.Format(time.RFC3339Nano), Recomputed: runWindow(c.ev.Run),
				Message: fmt.Sprintf("the event's time is outside the run (run.start to run.end, give or take %s): "+
					"it was moved, or it belongs to another run", timeTolerance)})
		}
		st.prevSeq, st.prevLine, st.lastTime = max(st.prevSeq, e.Seq), best.line, e.Time
		m.Step(e, Source{Log: path, Line: best.line, Seq: e.Seq})
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
	cancel()
	truncated := false
	for i, lr := range reads {
		<-lr.done
		if err := ctx.Err(); err != nil {
			return false, err
		}
		path := lr.ref.Path
		if lr.err != nil {
			run.logReason(Reason{Rule: "log-unreadable", Status: Fail, Log: path, Message: "read: " + lr.err.Error()})
			continue
		}
		if n := lr.slow.Load(); n > maxSlowLines {
			run.logReason(Reason{Rule: "log-too-broken", Status: Fail, Log: path,
				Message: fmt.Sprintf("%d lines needed the full schema validator; after %d of them the rest were not checked", n, maxSlowLines)})
		}
		if lr.tooLong > 0 {
			run.logReason(Reason{Rule: "event-line-too-long", Status: Fail, Log: path, Line: lr.tooLong,
				Message: fmt.Sprintf("line %d is longer than %d bytes: it and the lines after it were not read "+
					"(the digest and line count cover the whole file)", lr.tooLong, evidence.MaxLineBytes)})
		}
		if lr.sum != lr.ref.SHA256 {
			run.logReason(Reason{Rule: "log-digest", Status: Fail, Log: path, Field: "sha256", Claimed: lr.ref.SHA256, Recomputed: lr.sum,
				Message: "the log's sha256 differs from the one the evidence recorded: the log was changed after the run"})
		}
		if lr.lines != lr.ref.Lines {
			run.logReason(Reason{Rule: "log-lines", Status: Fail, Log: path, Field: "lines",
				Claimed: strconv.FormatInt(lr.ref.Lines, 10), Recomputed: strconv.FormatInt(lr.lines, 10),
				Message: fmt.Sprintf("the log has %d lines; the evidence recorded %d", lr.lines, lr.ref.Lines)})
		}
		if lr.truncated > 0 {
			truncated = true
			after := "its first event"
			if !states[i].lastTime.IsZero() {
				after = states[i].lastTime.Format(time.RFC3339Nano)
			}
			run.logReason(Reason{Rule: "log-truncated", Status: Inconclusive, Log: path, Line: lr.truncated,
				Message: fmt.Sprintf("line %d is cut (no newline): %s was killed while writing it. That event and anything "+
					"%s did after %s are unknown, so claims that depend on them cannot be concluded", lr.truncated,
					lr.ref.Actor, lr.ref.Actor, after)})
		}
	}
	return truncated, nil
}

// liveInvariantEvents compares the invariant events of the logs with the
// live results the evidence lists.
func (c *checker) liveInvariantEvents(sc *evidence.Scenario, m *Model, truncated bool) {
	live := map[string]int64{}
	for _, r := range sc.Invariants {
		if _, dup := live[r.ID]; dup {
			c.fail(sc.ID, "invariant-duplicate", "the live result of invariant %s is listed twice", r.ID)
		}
		live[r.ID] = r.Rows
	}
	for id, rows := range m.Invariants() {
		l, ok := live[id]
		switch {
		case !ok:
			c.mismatch(sc.ID, "invariant-log-mismatch", id, "", strconv.FormatInt(rows, 10),
				"the log records invariant %s = %d, but the evidence lists no live result for it", id, rows)
		case l != rows:
			c.mismatch(sc.ID, "invariant-log-mismatch", id, strconv.FormatInt(l, 10), strconv.FormatInt(rows, 10),
				"the evidence says invariant %s returned %d live rows; the invariant event in the log says %d", id, l, rows)
		}
	}
	for _, r := range sc.Invariants {
		if _, ok := m.Invariant(r.ID); !ok {
			if truncated {
				c.inconclusive(sc.ID, "invariant-log-missing", "no invariant event for %s: a log was cut", r.ID)
			} else {
				c.mismatch(sc.ID, "invariant-log-missing", r.ID, strconv.FormatInt(r.Rows, 10), "",
					"the evidence lists a live result for invariant %s that no invariant event records", r.ID)
			}
		}
	}
}

// sqlChecks loads the replayed end state, runs every invariant and digests
// every table, and compares them with the evidence. It returns the
// replayed invariant results (nil when SQL could not run).
func (c *checker) sqlChecks(ctx context.Context, sc *evidence.Scenario, m *Model) map[string]int64 {
	id := sc.ID
	// The digests are computed from the replayed rows on another core
	// while the SQL engine loads the tables the invariants read.
	srcs := sources(m)
	digests := make([]evidence.TableDigest, len(srcs))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i, s := range srcs {
			digests[i] = digestSource(s)
		}
	})
	defer wg.Wait()
	if err := c.eng.reset(ctx); err != nil {
		c.inconclusive(id, "sql-engine", "the replayed state could not be loaded: %v", err)
		return nil
	}
	if err := c.eng.load(ctx, usedTables(srcs, c.invs)); err != nil {
		c.inconclusive(id, "sql-engine", "the replayed state could not be loaded: %v", err)
		return nil
	}
	live := map[string]int64{}
	for _, r := range sc.Invariants {
		live[r.ID] = r.Rows
	}
	known := map[string]bool{}
	out := map[string]int64{}
	for _, inv := range c.invs {
		known[inv.ID] = true
		n, err := c.eng.countInvariant(ctx, inv)
		if err != nil {
			c.inconclusive(id, "sql-engine", "invariant %s could not run on the replayed state: %v", inv.ID, err)
			return nil
		}
		out[inv.ID] = n
		l, has := live[inv.ID]
		chk := InvariantCheck{Scenario: id, ID: inv.ID, Meaning: inv.Meaning, Live: -1, Replayed: n}
		if has {
			chk.Live = l
		}
		c.v.Invariants = append(c.v.Invariants, chk)
		if n > 0 {
			c.endState(Reason{Rule: inv.ID, Status: Fail, Scenario: id, Field: inv.ID, Recomputed: strconv.FormatInt(n, 10),
				Message: fmt.Sprintf("%d row(s) on the replayed end state. %s", n, inv.Meaning)})
		}
		switch {
		case !has && sc.Status != evidence.StatusNotRun:
			c.inconclusive(id, "invariant-not-recorded", "the evidence has no live result for invariant %s", inv.ID)
		case has && l != n:
			c.endState(Reason{Rule: "invariant-mismatch", Status: Fail, Scenario: id, Field: inv.ID,
				Claimed: strconv.FormatInt(l, 10), Recomputed: strconv.FormatInt(n, 10),
				Message: fmt.Sprintf("invariant %s returned %d row(s) live but %d on the replayed end state", inv.ID, l, n)})
		}
	}
	for _, r := range sc.Invariants {
		if !known[r.ID] {
			c.inconclusive(id, "invariant-unknown", "the evidence lists invariant %s, which the verifier does not have", r.ID)
		}
	}

	claimed := map[string]evidence.TableDigest{}
	for _, t := range sc.Tables {
		if _, dup := claimed[t.Table]; dup {
			c.fail(id, "table-duplicate", "table %s is digested twice", t.Table)
		}
		claimed[t.Table] = t
	}
	specs := map[string]bool{}
	wg.Wait()
	for i, spec := range evidence.DigestSpecs {
		specs[spec.Table] = true
		d := digests[i]
		t, ok := claimed[spec.Table]
		switch {
		case !ok && sc.Status != evidence.StatusNotRun:
			c.inconclusive(id, "table-not-recorded", "the evidence has no digest of table %s", spec.Table)
		case ok && (t.Rows != d.Rows || t.SHA256 != d.SHA256):
			c.endState(Reason{Rule: "table-digest", Status: Fail, Scenario: id, Field: spec.Table,
				Claimed: digestText(t), Recomputed: digestText(d),
				Message: fmt.Sprintf("table %s: the live digest differs from the replayed end state (%d live rows, %d replayed)",
					spec.Table, t.Rows, d.Rows)})
		}
	}
	for _, t := range sc.Tables {
		if !specs[t.Table] {
			c.inconclusive(id, "table-unknown", "the evidence digests table %s, which the verifier does not replay", t.Table)
		}
	}
	return out
}

func digestText(d evidence.TableDigest) string {
	return fmt.Sprintf("%d rows, sha256 %s", d.Rows, d.SHA256)
}

// metrics recomputes a known scenario's metrics, status and line and
// compares them with the claims.
func (c *checker) metrics(sc *evidence.Scenario, s spec.Scenario, d derivation, f facts) {
	id := sc.ID
	rec := d.metrics(f)
	byName := map[string]metricValue{}
	var names []string
	for _, r := range rec {
		byName[r.name] = r
		names = append(names, r.name)
	}
	var claimedNames []string
	for _, cm := range sc.Metrics {
		claimedNames = append(claimedNames, cm.Name)
		r, ok := byName[cm.Name]
		switch {
		case !ok:
			c.mismatch(id, "metric-mismatch", cm.Name, cm.Value, "",
				"scenario %s has no metric %s (its metrics are %s)", id, cm.Name, strings.Join(names, ", "))
		case !r.ok:
			// A claim no event supports is a defect; with a cut log the
			// supporting event may be the one lost.
			c.endState(Reason{Rule: "metric-not-recomputable", Status: Fail, Scenario: id, Field: cm.Name, Claimed: cm.Value,
				Message: fmt.Sprintf("%s=%s cannot be recomputed from the events: %s", cm.Name, cm.Value, r.why)})
		case r.value != cm.Value:
			c.endState(Reason{Rule: "metric-mismatch", Status: Fail, Scenario: id, Field: cm.Name, Claimed: cm.Value,
				Recomputed: r.value, Message: fmt.Sprintf("%s: the evidence claims %s, the events give %s", cm.Name, cm.Value, r.value)})
		}
	}
	if sc.Status == evidence.StatusNotRun {
		return
	}
	if !slices.Equal(claimedNames, names) {
		missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(claimedNames, n) })
		switch {
		case len(missing) > 0 && sc.Status == evidence.StatusPass:
			c.mismatch(id, "metric-mismatch", strings.Join(missing, ","), "", strings.Join(names, " "),
				"a passing scenario must claim every metric: %s missing", strings.Join(missing, ", "))
		case len(missing) == 0 || sc.Status == evidence.StatusPass:
			c.mismatch(id, "metric-mismatch", "(order)", strings.Join(claimedNames, " "), strings.Join(names, " "),
				"the metrics are not in line order")
		}
	}
	if d.injected != nil && sc.Status == evidence.StatusPass {
		if why := d.injected(f); why != "" {
			c.endState(Reason{Rule: "fault-not-injected", Status: Fail, Scenario: id,
				Message: "the scenario claims PASS at the " + s.Boundary + " boundary, but the events do not show its fault injection: " + why})
		}
	}
	pass, decided := accepted(s, rec)
	recStatus := evidence.StatusFail
	if pass {
		recStatus = evidence.StatusPass
	}
	switch {
	case sc.Status == evidence.StatusPass && !decided:
		c.endState(Reason{Rule: "status-not-recomputable", Status: Fail, Scenario: id, Field: "status", Claimed: sc.Status,
			Message: "PASS cannot be confirmed: a metric its acceptance needs cannot be recomputed from the events"})
	case sc.Status == evidence.StatusPass && !pass:
		c.endState(Reason{Rule: "status-mismatch", Status: Fail, Scenario: id, Field: "status", Claimed: sc.Status,
			Recomputed: recStatus, Message: fmt.Sprintf("the scenario claims PASS, but the recomputed metrics do not meet its acceptance (%s)",
				s.AcceptText())})
	}
	allKnown := true
	ms := make([]evidence.Metric, len(rec))
	for i, r := range rec {
		allKnown = allKnown && r.ok
		ms[i] = evidence.Metric{Name: r.name, Value: r.value}
	}
	if allKnown && decided && sc.Status != evidence.StatusFail {
		if want := evidence.FormatLine(s.Suite, id, recStatus, ms); want != sc.Line {
			c.endState(Reason{Rule: "line-mismatch", Status: Fail, Scenario: id, Field: "line", Claimed: sc.Line,
				Recomputed: want, Message: "the observation line the events support differs"})
		}
	}
}

// sameAsSpec checks what the evidence says a known scenario is against the
// spec: its suite, boundary and fault points.
func (c *checker) sameAsSpec(sc *evidence.Scenario, s spec.Scenario) {
	id := sc.ID
	if s.Suite != sc.Suite {
		c.mismatch(id, "scenario-mismatch", "suite", sc.Suite, s.Suite, "scenario %s belongs to suite %s", id, s.Suite)
	}
	if s.Boundary != sc.Boundary {
		c.mismatch(id, "scenario-mismatch", "boundary", sc.Boundary, s.Boundary, "scenario %s is at boundary %s", id, s.Boundary)
	}
	if want := s.FaultPoints(); !equalStrings(sc.FaultPoints, want) {
		c.mismatch(id, "scenario-mismatch", "fault_points", strings.Join(sc.FaultPoints, ","), strings.Join(want, ","),
			"scenario %s injects faults at %s", id, orDefault(strings.Join(want, ", "), "no point"))
	}
}
