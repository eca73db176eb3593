package checks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/crosscheck"
	"github.com/orderflow-audit/orderflow-audit/checks/eventline"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
)

// Replaying the event logs of one scenario, in named steps (replay):
//
//  1. openLogs: open each log through the bundle's gate; a missing,
//     refused, duplicated or shared log is a reason.
//  2. foldEvents: merge the logs' decoded events in time order
//     (evidence.Merge, decoding on the verifier's pool) and fold them into
//     the model; a line that is not a valid event is a reason (lineReason),
//     and so is every event that breaks its log's order or identity
//     (checkEvent).
//  3. logTails: what reading each log found once it is read whole: read
//     errors, digest, line count, a line too long, a cut last line.

// maxSlowLines bounds, per log, the lines that need the full JSON Schema
// validator (~100-165 us each): a hostile log of a million schema-invalid
// lines would otherwise take minutes. Past it, lines the fast path cannot
// decide are not checked and the log fails with log-too-broken.
const maxSlowLines = 20000

// newDecoderPool starts the workers that decode event lines: the fast
// path compiled from the event schema, else the full validator.
func newDecoderPool(workers int) *evidence.Pool { return evidence.NewPool(workers, newLineDecoder) }

// newLineDecoder makes the decoder of one worker; a variable so that a
// benchmark can compare decoders end to end (decodebench_test.go).
var newLineDecoder = func() evidence.Decoder { return eventline.NewDecoder() }

// readOptions are how the verifier reads a log: a cut last line is not an
// event (logTails names it), and a log of lines that all need the full
// validator is cut short.
var readOptions = evidence.ReadOptions{MaxFullLines: maxSlowLines}

// logState is what the replay remembers of one log between its events.
type logState struct {
	ref               evidence.LogRef
	prevSeq, prevLine int64
	lastTime          time.Time
}

// replay reads the scenario's logs, checks their integrity and folds their
// events, merged by time, into m. It reports whether a log was cut.
func (c *checker) replay(ctx context.Context, sc *evidence.Scenario, m *Model, run *scenarioRun) (bool, error) {
	logs, states := c.openLogs(sc, run)
	if ml, res := c.resolveUnlogged(sc); ml != nil {
		logs = append(logs, *ml)
		states = append(states, logState{ref: ml.Ref})
		c.v.Resolved = append(c.v.Resolved, res...)
	}
	merge := c.pool.Merge(ctx, logs, readOptions, func(i int, e evidence.LineError) {
		run.logReason(lineReason(states[i].ref.Path, e))
	})
	err := c.foldEvents(ctx, sc, m, run, merge, states)
	stats := merge.Close()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return false, err
	}
	return c.logTails(run, states, stats), nil
}

// openLogs opens the scenario's logs through the bundle's gate and
// returns those to read, with a state for each. A log the gate refuses (a
// symlink, not a regular file, more than one hard link, larger than
// bundle.MaxLogBytes, beyond the bundle's byte budget) is a reason naming
// it, and is not read.
//
// A log is read once, streamed: its sha256 and line count are computed
// as its lines are decoded, and a mismatch with the evidence is log-digest
// or log-lines (logTails), with the replay's findings beside it (a forger
// who rewrote a log is shown what the rewrite changed). Reading a log whose
// digest is wrong is bounded all the same: the gate caps its bytes (and
// the reader never reads past the size fstat gave), a line longer than
// evidence.MaxLineBytes is not buffered, and past maxSlowLines lines that
// need the full validator the rest are not decoded.
func (c *checker) openLogs(sc *evidence.Scenario, run *scenarioRun) ([]evidence.MergeLog, []logState) {
	var (
		logs   []evidence.MergeLog
		states []logState
	)
	for _, ref := range sc.Logs {
		f, err := c.b.OpenFile(ref.Path, bundle.KindLog)
		switch {
		case errors.Is(err, bundle.ErrMissing):
			run.logReason(Reason{Rule: "log-missing", Status: Fail, Log: ref.Path,
				Message: fmt.Sprintf("the event log %s of %s does not exist next to the evidence file", ref.Path, ref.Actor)})
			continue
		case err != nil:
			run.logReason(Reason{Rule: "log-path", Status: Fail, Log: ref.Path, Message: "rejected log path: " + err.Error()})
			continue
		}
		// The gate follows no link and refuses a second hard link, so two
		// references to one file are two references to one path.
		if owner, dup := c.logOwners[f.ID()]; dup {
			if owner == sc.ID {
				f.Close()
				run.logReason(Reason{Rule: "log-duplicate", Status: Fail, Log: ref.Path,
					Message: "the same log is referenced twice by this scenario: its events would count twice"})
				continue
			}
			run.logReason(Reason{Rule: "log-shared", Status: Fail, Log: ref.Path,
				Message: "this log is also referenced by scenario " + owner})
		}
		c.logOwners[f.ID()] = sc.ID
		logs = append(logs, evidence.MergeLog{Ref: ref, Open: func() (io.ReadCloser, error) { return readCloser{f.Reader(), f}, nil }})
		states = append(states, logState{ref: ref})
	}
	return logs, states
}

// readCloser reads a gated file's bytes and closes the file.
type readCloser struct {
	io.Reader
	io.Closer
}

// lineReason is the reason for a line of the log at path that is not a
// valid event.
func lineReason(path string, e evidence.LineError) Reason {
	rule, msg := "event-schema", "line is not a valid event: "+e.Err.Error()
	var p *eventline.Problem
	if errors.As(e.Err, &p) && p.Decode != "" {
		rule, msg = "event-decode", "line "+p.Decode
	}
	return Reason{Rule: rule, Status: Fail, Log: path, Line: e.Line, Message: msg}
}

// foldEvents steps m through the merged events, checking each against its
// log.
func (c *checker) foldEvents(ctx context.Context, sc *evidence.Scenario, m *Model, run *scenarioRun, merge *evidence.Merge, states []logState) error {
	w := eventWindow{runID: c.ev.Run.ID, scenario: sc.ID, run: c.ev.Run,
		lo: c.ev.Run.Start.Add(-timeTolerance), hi: c.ev.Run.End.Add(timeTolerance),
		// else evidenceLevel failed the run's own times
		checkRunTimes: !c.ev.Run.End.Before(c.ev.Run.Start)}
	for n := int64(1); ; n++ {
		i, d, err := merge.Next(ctx)
		if err != nil {
			return err
		}
		if d == nil {
			return nil
		}
		st := &states[i]
		w.check(run, st, d)
		st.prevSeq, st.prevLine, st.lastTime = max(st.prevSeq, d.Event.Seq), d.Line, d.Event.Time
		src := Source{Log: st.ref.Path, Line: d.Line, Seq: d.Event.Seq}
		m.Step(&d.Event, src)
		if c.collect {
			c.wevents = crosscheck.Keep(c.wevents, &d.Event, src)
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// eventWindow is what every event of a scenario is held against.
type eventWindow struct {
	runID, scenario string
	run             evidence.Run
	lo, hi          time.Time
	checkRunTimes   bool
}

// check holds one event against its log (seq order and gaps, time order)
// and the run (run id, scenario, actor, the run's time window).
func (w *eventWindow) check(run *scenarioRun, st *logState, d *evidence.Decoded) {
	path, e, line := st.ref.Path, &d.Event, d.Line
	switch {
	case e.Seq <= st.prevSeq:
		run.logReason(Reason{Rule: "seq-order", Status: Fail, Log: path, Seq: e.Seq, Line: line,
			Message: fmt.Sprintf("seq %d after seq %d: events reordered or duplicated", e.Seq, st.prevSeq)})
	case e.Seq != st.prevSeq+1 && line == st.prevLine+1:
		run.logReason(Reason{Rule: "seq-gap", Status: Fail, Log: path, Seq: e.Seq, Line: line,
			Message: fmt.Sprintf("seq jumps from %d to %d: an event line is missing", st.prevSeq, e.Seq)})
	}
	if e.RunID != w.runID {
		run.logReason(Reason{Rule: "run-id", Status: Fail, Log: path, Seq: e.Seq, Line: line, Field: "run_id",
			Claimed: w.runID, Recomputed: e.RunID, Message: fmt.Sprintf("event of run %q in the evidence of run %q", e.RunID, w.runID)})
	}
	if e.Scenario != w.scenario {
		run.logReason(Reason{Rule: "log-scenario", Status: Fail, Log: path, Seq: e.Seq, Line: line, Field: "scenario",
			Claimed: w.scenario, Recomputed: e.Scenario,
			Message: fmt.Sprintf("event of scenario %q in a log that scenario %q references", e.Scenario, w.scenario)})
	}
	if actor := st.ref.Actor; e.Actor != actor {
		run.logReason(Reason{Rule: "log-actor", Status: Fail, Log: path, Seq: e.Seq, Line: line, Field: "actor",
			Claimed: actor, Recomputed: e.Actor,
			Message: fmt.Sprintf("event of actor %q in the log the evidence lists as %q's: logs swapped or relabelled", e.Actor, actor)})
	}
	if e.Time.Before(st.lastTime) {
		run.logReason(Reason{Rule: "time-order", Status: Fail, Log: path, Seq: e.Seq, Line: line, Field: "time",
			Claimed: e.Time.Format(time.RFC3339Nano), Recomputed: "not before " + st.lastTime.Format(time.RFC3339Nano),
			Message: fmt.Sprintf("time goes back %s from the line before: an actor logs its events as they happen, "+
				"so its log is in time order; this event was moved", st.lastTime.Sub(e.Time))})
	}
	if w.checkRunTimes && (e.Time.Before(w.lo) || e.Time.After(w.hi)) {
		run.logReason(Reason{Rule: "time-outside-run", Status: Fail, Log: path, Seq: e.Seq, Line: line, Field: "time",
			Claimed: e.Time.Format(time.RFC3339Nano), Recomputed: runWindow(w.run),
			Message: fmt.Sprintf("the event's time is outside the run (run.start to run.end, give or take %s): "+
				"it was moved, or it belongs to another run", timeTolerance)})
	}
}

// logTails checks what reading each log found, and reports whether a log
// was cut.
func (c *checker) logTails(run *scenarioRun, states []logState, stats []evidence.LogStats) (truncated bool) {
	for i, st := range stats {
		ref := states[i].ref
		path := ref.Path
		if err := errors.Join(st.OpenErr, st.ReadErr); err != nil {
			run.logReason(Reason{Rule: "log-unreadable", Status: Fail, Log: path, Message: "read: " + err.Error()})
			continue
		}
		if st.Full > maxSlowLines {
			run.logReason(Reason{Rule: "log-too-broken", Status: Fail, Log: path,
				Message: fmt.Sprintf("%d lines needed the full schema validator; after %d of them the rest were not checked", st.Full, maxSlowLines)})
		}
		if st.TooLong > 0 {
			run.logReason(Reason{Rule: "event-line-too-long", Status: Fail, Log: path, Line: st.TooLong,
				Message: fmt.Sprintf("line %d is longer than %d bytes: it and the lines after it were not read "+
					"(the digest and line count cover the whole file)", st.TooLong, evidence.MaxLineBytes)})
		}
		if st.SHA256 != ref.SHA256 {
			run.logReason(Reason{Rule: "log-digest", Status: Fail, Log: path, Field: "sha256", Claimed: ref.SHA256, Recomputed: st.SHA256,
				Message: "the log's sha256 differs from the one the evidence recorded: the log was changed after the run"})
		}
		if st.Lines != ref.Lines {
			run.logReason(Reason{Rule: "log-lines", Status: Fail, Log: path, Field: "lines",
				Claimed: strconv.FormatInt(ref.Lines, 10), Recomputed: strconv.FormatInt(st.Lines, 10),
				Message: fmt.Sprintf("the log has %d lines; the evidence recorded %d", st.Lines, ref.Lines)})
		}
		if st.Truncated > 0 {
			truncated = true
			after := "its first event"
			if !states[i].lastTime.IsZero() {
				after = states[i].lastTime.Format(time.RFC3339Nano)
			}
			run.logReason(Reason{Rule: "log-truncated", Status: Inconclusive, Log: path, Line: st.Truncated,
				Message: fmt.Sprintf("line %d is cut (no newline): %s was killed while writing it. That event and anything "+
					"%s did after %s are unknown, so claims that depend on them cannot be concluded", st.Truncated,
					ref.Actor, ref.Actor, after)})
		}
	}
	return truncated
}
