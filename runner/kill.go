package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/actor"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// killRuns are the scenarios this file runs, by id (runs): relayKill9 of
// the send boundary (spec/send.go).
var killRuns = map[string]runFunc{
	"relayKill9": relayKill9,
}

// killLease is relay A's lease: short, so that it runs out by itself on the
// database clock instead of being aged by SQL.
const killLease = 400 * time.Millisecond

// killMinTimeout is relayKill9's shortest timeout: its lease plus the start
// of a process and a takeover, with room for a loaded machine (an actor
// process to start, a lease to run out on the database clock, a takeover:
// below this it cannot pass).
const killMinTimeout = 3 * time.Second

// relayKill9 runs the scenario relayKill9 of spec/send.go, which says what
// it does and what its metrics mean.
func relayKill9(ctx context.Context, e *Env) error {
	if e.exe == "" {
		return errors.New("no executable to start an actor process from")
	}
	topic, placed, err := e.startChain(ctx, "kill", 1)
	if err != nil {
		return err
	}
	order := placed[0]

	claimIDA := "relay-a-" + e.RunID
	logPath, err := e.logPath("relay-a")
	if err != nil {
		return err
	}
	proc, err := actor.Start(ctx, e.exe, actor.Spec{
		Role: actor.Relay, DB: e.Scratch.Name, LogPath: logPath, RunID: e.RunID, Scenario: e.Scenario.ID,
		Actor: "relay-a", ClaimID: claimIDA, Faults: []string{string(spec.AfterPublishBeforeMark) + ":kill"},
		Plant: string(e.Plant), Brokers: e.Kafka.Brokers, Topic: topic, Lease: killLease, Once: true,
	}, actor.Env(e.Server.DSNFor(e.Scratch.Name), nil)) // a relay needs no JWT secret
	if err != nil {
		return err
	}
	exit, err := proc.Wait()
	if err != nil {
		return err
	}
	killed, aClaimed, err := e.recordKill(proc.Pid(), exit, logPath, order.EventID)
	if err != nil {
		return err
	}

	// Wait for the lease to run out on the database clock.
	deadline := time.Now().Add(killLease + 5*time.Second)
	for {
		live, err := e.Count(ctx, "outbox", "event_id = ? AND state = 'CLAIMED' AND lease_until >= NOW(6)", order.EventID)
		if err != nil {
			return err
		}
		if live == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	b, err := e.Relay("relay-b", topic, nil)
	if err != nil {
		return err
	}
	resB, err := b.RunOnce(ctx)
	if err != nil {
		return err
	}
	// A takeover is B's claim of an intent that A had claimed, under a
	// claim id other than A's (as the verifier defines it: the first claim
	// by another claim id; a claim that kept A's claim id is none).
	var takeover int64
	for _, c := range resB.Claimed {
		if c.EventID == order.EventID && aClaimed && c.ClaimID != claimIDA {
			takeover = c.ClaimVersion
		}
	}
	m, err := e.measureTakeover(ctx, topic, order.EventID)
	if err != nil {
		return err
	}
	e.Result.Metric("killed", killed)
	e.Result.Metric("takeoverVersion", takeover)
	e.Result.Metric("deliveries", m.deliveries)
	e.Result.Metric("businessEffects", m.effects)
	e.Result.Metric("state", m.state)
	return nil
}

// recordKill records how relay A's process ended, where it had got to by
// its own log. Only a SIGKILL after its publish of eventID and before its
// mark is the injected fault (at after-publish-before-mark); a SIGKILL at
// any other step came from outside the scenario and is recorded as a kill
// (FaultSIGKILL) at the step the log shows, and fails the scenario.
func (e *Env) recordKill(pid int, exit actor.Exit, logPath, eventID string) (atPoint, claimed bool, err error) {
	st, claim := reachedStep(logPath, eventID)
	if !exit.Killed() {
		e.Result.Failf("relay-a process was not killed: %s", exit)
		return false, claim != nil, nil
	}
	if st == stepPublished {
		return true, true, e.Emit(evidence.Event{
			Kind: evidence.KindFault, Point: string(spec.AfterPublishBeforeMark), EventID: eventID,
			Detail: fmt.Sprintf("relay-a process (pid %d) ended by SIGKILL", pid),
		})
	}
	// Not the armed point: a kill from outside, recorded where it hit
	// (a point the scenario does not declare, which the verifier names).
	ev := evidence.Event{
		Kind:  evidence.KindFault,
		Point: st.point,
		Detail: fmt.Sprintf("relay-a process (pid %d) ended by SIGKILL from outside the scenario %s; the armed point %s was not reached",
			pid, st.text, spec.AfterPublishBeforeMark),
	}
	if claim != nil {
		ev.EventID, ev.ClaimVersion, ev.ClaimID = eventID, claim.ClaimVersion, claim.ClaimID
	}
	e.Result.Failf("relay-a was killed by SIGKILL %s, not at %s (killed from outside)", st.text, spec.AfterPublishBeforeMark)
	return false, claim != nil, e.Emit(ev)
}

// step is how far relay A got with the intent: the point its log shows it
// at, and the same in words.
type step struct{ point, text string }

// Steps of relay A's round, as its log shows them.
var (
	stepNone      = step{"before-claim", "before claiming"}
	stepClaimed   = step{string(spec.AfterClaimBeforePublish), "after claiming, before publishing"}
	stepPublished = step{string(spec.AfterPublishBeforeMark), "after publishing, before marking"}
	// A failed publish is followed by no mark: the relay leaves the claim.
	stepPublishFailed = step{"after-failed-publish", "after a failed publish"}
	stepMarked        = step{"after-mark", "after marking"}
)

// reachedStep reads relay A's log (a killed process may have cut its last
// line: the events before it count) and says how far it got with eventID:
// the step after its last claim, publish or mark of it (a planted relay
// may mark before it publishes), with its claim when it made one.
func reachedStep(logPath, eventID string) (step, *evidence.Event) {
	events, _ := evidence.ReadEvents(logPath)
	step := stepNone
	var claim *evidence.Event
	for i, ev := range events {
		if ev.EventID != eventID {
			continue
		}
		switch ev.Kind {
		case evidence.KindClaim:
			step, claim = stepClaimed, &events[i]
		case evidence.KindPublish:
			if ev.Err == "" {
				step = stepPublished
			} else {
				step = stepPublishFailed
			}
		case evidence.KindMark:
			step = stepMarked
		}
	}
	return step, claim
}
