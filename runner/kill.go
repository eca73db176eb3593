package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/actor"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
)

func init() { bind("relayKill9", relayKill9) }

// killLease is relay A's lease: short, so that it runs out by itself on the
// database clock instead of being aged by SQL.
const killLease = 400 * time.Millisecond

func relayKill9(ctx context.Context, e *Env) error {
	if e.exe == "" {
		return errors.New("no executable to start an actor process from")
	}
	topic, placed, err := e.startChain(ctx, "kill", 1)
	if err != nil {
		return err
	}
	order := placed[0]

	logPath, err := e.logPath("relay-a")
	if err != nil {
		return err
	}
	proc, err := actor.Start(ctx, e.exe, actor.Spec{
		Role: actor.Relay, DB: e.Scratch.Name, LogPath: logPath, RunID: e.RunID, Scenario: e.Scenario.ID,
		Actor: "relay-a", ClaimID: "relay-a-" + e.RunID, Faults: []string{string(fault.AfterPublishBeforeMark) + ":kill"},
		Plant: string(e.Plant), Brokers: e.Kafka.Brokers, Topic: topic, Lease: killLease, Once: true,
	}, actor.Env(e.Server.DSNFor(e.Scratch.Name), nil)) // a relay needs no JWT secret
	if err != nil {
		return err
	}
	exit, err := proc.Wait()
	if err != nil {
		return err
	}
	killed := exit.Killed()
	if killed {
		if err := e.Emit(evidence.Event{
			Kind: evidence.KindFault, Point: string(fault.AfterPublishBeforeMark), EventID: order.EventID,
			Detail: fmt.Sprintf("relay-a process (pid %d) ended by SIGKILL", proc.Pid()),
		}); err != nil {
			return err
		}
	} else {
		e.Result.Failf("relay-a process was not killed: %s", exit)
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
	var takeover int64
	for _, c := range resB.Claimed {
		if c.EventID == order.EventID {
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
