package runner

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

// endStateTimeout bounds the end-state queries (invariants and table
// digests) of a scenario, which run after its own timeout may have passed.
const endStateTimeout = 10 * time.Second

// runOne runs one scenario in a fresh scratch database and returns its
// record, and whether it ran actors as OS processes. A scenario that the
// caller interrupted or that lost the infrastructure did not run to its
// end: it is NOT_RUN, never FAIL, and its partial logs stay on disk
// without being part of the evidence.
func runOne(parent context.Context, rs *runScope, sc Scenario) (evidence.Scenario, bool) {
	t0 := rs.opts.Now()
	ctx, cancel := context.WithTimeout(parent, rs.opts.Timeout)
	defer cancel()
	scratch, failed := rs.createScratch(parent, sc, t0)
	if scratch == nil {
		return failed, false
	}
	rec := scenarioRecord(sc)
	rec.Database = scratch.Name
	env := &Env{
		RunID: rs.runID, Scenario: sc, Server: rs.server, Scratch: scratch, DB: scratch.DB,
		Kafka: rs.kafka, SUT: *rs.opts.SUT, Plant: rs.opts.Plant, Faults: &fault.Injector{}, Secret: rs.secret,
		Rand:    mrand.New(mrand.NewPCG(uint64(rs.opts.Seed), scenarioStream(sc.ID))),
		Chaos:   rs.opts.chaosConfig(),
		Log:     rs.opts.Logger.With("scenario", sc.ID),
		exe:     rs.opts.Executable,
		crashDB: rs.crashDBFunc(),
		logDir:  filepath.Join(rs.stage, sc.ID),
		logRel:  rs.base + "/" + sc.ID,
		logs:    map[string]*evidence.Log{},
	}

	runErr := safeRun(ctx, env, sc)
	env.close()

	// Did it run to its end? A scenario that failed or timed out may have
	// been cut short by the infrastructure: probe it before blaming the
	// system under test.
	what, detail := rs.stopped(parent)
	if what == "" && (runErr != nil || ctx.Err() != nil || !env.Result.Passed()) && rs.watch.check(parent) != nil {
		what, detail = rs.stopped(parent)
	}
	var endErr error
	if what == "" {
		// The end state is recorded whatever the scenario did, so that
		// the verifier can compare it with the replay.
		ectx, ecancel := context.WithTimeout(context.WithoutCancel(ctx), endStateTimeout)
		endErr = env.recordEndState(ectx, &rec)
		ecancel()
		if endErr != nil && rs.watch.check(parent) != nil {
			what, detail = rs.stopped(parent)
		}
	}
	refs, logErr := env.closeLogs()
	// A log the disk refused is the run's failure to write its bundle
	// (finish), not the system under test's.
	rs.noteWrite("write the event logs of "+sc.ID, logErr)
	rs.noteWrite("write the event logs of "+sc.ID, runErr)
	rs.release(&rec, scratch, env.topics)
	if what != "" {
		when := fmt.Sprintf("after %.1fs", rs.opts.Now().Sub(t0).Seconds())
		note := "its partial event logs are kept in " + env.logRel + "/, not part of the evidence"
		r := notRun(sc, notRunReason(what, when, detail, note))
		r.Database, r.Kept, r.Topics = rec.Database, rec.Kept, append([]string{}, env.topics...)
		r.ElapsedMS = rs.opts.Now().Sub(t0).Milliseconds()
		return r, false
	}
	rec.Logs = refs
	rec.Topics = append([]string{}, env.topics...)
	rec.Metrics = env.Result.Metrics
	if rec.Metrics == nil {
		rec.Metrics = []evidence.Metric{}
	}
	env.Result.judge(sc.Scenario, runErr == nil)
	setStatus(&rec, env.Result, runErr, endErr, logErr)
	rec.ElapsedMS = rs.opts.Now().Sub(t0).Milliseconds()
	return rec, env.processes
}

// createScratch creates the scenario's scratch database. When it cannot,
// it returns nil and the scenario's record: NOT_RUN when the run was
// stopped (interrupted, infrastructure lost), FAIL otherwise.
func (rs *runScope) createScratch(parent context.Context, sc Scenario, t0 time.Time) (*infra.Scratch, evidence.Scenario) {
	// Creating and migrating takes milliseconds: an interrupt lets it
	// finish (so that nothing is left half made), a lost server does not.
	cctx, cancel := context.WithTimeout(rs.watch.lostCtx, rs.opts.Timeout)
	defer cancel()
	scratch, err := rs.server.CreateScratch(cctx, infra.ScratchName(rs.runID, sc.ID), rs.runID)
	if err == nil {
		return scratch, evidence.Scenario{}
	}
	what, detail := rs.stopped(parent)
	if what == "" && rs.watch.check(parent) != nil {
		what, detail = rs.stopped(parent)
	}
	if what != "" {
		return nil, notRun(sc, notRunReason(what, "before it started", detail, ""))
	}
	rec := scenarioRecord(sc)
	rec.Status = evidence.StatusFail
	rec.Reason = oneLine("could not create scratch database: " + err.Error())
	rec.Line = evidence.FormatLine(sc.Suite, sc.ID, rec.Status, rec.Metrics)
	rec.ElapsedMS = rs.opts.Now().Sub(t0).Milliseconds()
	return nil, rec
}

// setStatus decides the status of a scenario that ran to its end: PASS
// unless it could not run, its end state or a log could not be recorded,
// or a condition of its result failed; the reasons say which.
func setStatus(rec *evidence.Scenario, res Result, runErr, endErr, logErr error) {
	var reasons []string
	if runErr != nil {
		reasons = append(reasons, "could not run: "+runErr.Error())
	}
	if endErr != nil {
		reasons = append(reasons, "end state: "+endErr.Error())
	}
	if logErr != nil {
		reasons = append(reasons, "event log: "+logErr.Error())
	}
	if !res.Passed() {
		reasons = append(reasons, res.Reason())
	}
	rec.Status = evidence.StatusPass
	if len(reasons) > 0 {
		rec.Status = evidence.StatusFail
		rec.Reason = oneLine(strings.Join(reasons, "; "))
	}
	rec.Line = evidence.FormatLine(rec.Suite, rec.ID, rec.Status, rec.Metrics)
}

// release keeps (--keep) or drops the scenario's scratch database (each
// step bounded by infra.CleanupTimeout) and marks its topics on an
// external broker for deletion at the end of the run. Whatever cannot be
// dropped is said on Progress, with how to remove it later; a part of the
// infrastructure known lost is not waited for.
func (rs *runScope) release(rec *evidence.Scenario, scratch *infra.Scratch, topics []string) {
	if rs.opts.Keep {
		rec.Kept = true
		fmt.Fprintf(rs.opts.Progress, "kept database %s for scenario %s\n", scratch.Name, rec.ID)
		scratch.DB.Close()
		return
	}
	// A server that stopped answering would hold each drop for its whole
	// bound: probe it first (milliseconds when it is well).
	lost := rs.watch.check(context.Background())
	if lost != nil && lost.database {
		scratch.DB.Close()
		fmt.Fprintf(rs.opts.Progress, "scratch database %s is left on the server, which was lost; "+
			"once it answers again, 'orderflow-audit clean' drops it\n", scratch.Name)
	} else {
		ctx, cancel := infra.CleanupContext(context.Background())
		err := scratch.Drop(ctx)
		cancel()
		if err != nil {
			fmt.Fprintf(rs.opts.Progress, "scratch database %s may be left on the server (%s); "+
				"'orderflow-audit clean' drops it, if so, once this run has ended\n", scratch.Name, oneLine(err.Error()))
		}
	}
	if lost != nil && !lost.database {
		return // the broker is gone, and its topics with it (or they stay on it)
	}
	// The topics are the broker's record of the run (its witness): the
	// embedded broker keeps them in its data directory and ends with the
	// run; an external broker's are deleted once they are dumped, at the
	// end (captureBroker).
	if rs.kafka.Mode == infra.ModeExternal {
		rs.doomed = append(rs.doomed, topics...)
	}
}

// safeRun turns a panic in a scenario into an error, and a scenario that
// does not return after its context ended into errAbandoned, so that one
// broken scenario cannot take the run (and its cleanup) down or hang it.
func safeRun(ctx context.Context, env *Env, sc Scenario) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("scenario panicked: %v", r)
			}
		}()
		done <- sc.Run(ctx, env)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// The scenario's context is done (its timeout, or an interrupt): it
	// has abandonGrace to notice and return. One that does not is stuck
	// in something that ignores its context; the run abandons it (its
	// goroutine is left behind, writes to its closed logs fail) rather
	// than hang for ever.
	t := time.NewTimer(abandonGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w: it did not return %s after its context ended (%v)", errAbandoned, abandonGrace, context.Cause(ctx))
	}
}

// abandonGrace is how long a scenario whose context ended may take to
// return before the run abandons it.
var abandonGrace = 5 * time.Second

// errAbandoned marks a scenario the run gave up waiting for.
var errAbandoned = errors.New("scenario abandoned")
