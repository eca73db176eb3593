package spec

import "slices"

// Point is a named place in the chain where a fault is injected.
type Point string

// The fault points. The first is not a place in our code but a real
// database error the scenario provokes; the others are places in an
// actor's code path where runner/fault can stop it.
const (
	// OutboxUniqueConflict: the order transaction's last write (the
	// intent) hits the unique key of a seeded decoy row.
	OutboxUniqueConflict Point = "outbox-unique-conflict"
	// AfterPublishBeforeMark: the relay's publish was acknowledged, the
	// mark has not run (the send boundary).
	AfterPublishBeforeMark Point = "after-publish-before-mark"
	// AfterEffectBeforeOffsetCommit: the consumer's effect transaction
	// committed, the offset has not been committed (the ack boundary).
	AfterEffectBeforeOffsetCommit Point = "after-effect-before-offset-commit"
	// AfterClaimBeforePublish: the relay holds a claim and has not
	// published.
	AfterClaimBeforePublish Point = "after-claim-before-publish"
	// AfterOrderCommitBeforeOutbox: only reachable with the planted bug
	// outbox-outside-tx: the order committed, its intent not yet written.
	AfterOrderCommitBeforeOutbox Point = "after-order-commit-before-outbox"
	// PublishRefused: the broker refuses a produce request of the relay.
	PublishRefused Point = "publish-refused"
	// PublishTimeout: the broker leaves a produce request of the relay
	// unanswered.
	PublishTimeout Point = "publish-timeout"
	// PublishAckLost: the broker appends the relay's record and its
	// acknowledgement is lost.
	PublishAckLost Point = "publish-ack-lost"
	// EffectInsertError: the consumer's effect insert fails after its inbox
	// insert, in the same transaction (a trigger raises an error).
	EffectInsertError Point = "effect-insert-error"
	// EffectCommitKilled: the consumer's connection is killed after its
	// inserts, before its COMMIT reached the server.
	EffectCommitKilled Point = "effect-commit-killed"

	// CallFailed: one database statement or broker call of the relay or
	// the consumer fails once, at a site the call hook names
	// (runner/fault.Call): before it took effect, after it took effect
	// (an unknown outcome), or on a killed connection. The sweep suite
	// runs it at every site a clean run passes, in each mode.
	CallFailed Point = "call-failed"

	// ClaimLocked is not a fault but a place to interleave: the relay's
	// claim transaction has selected (and, with FOR UPDATE SKIP LOCKED,
	// locked) its due rows and not yet claimed them. concurrentRelays runs
	// the other relay's whole claim there, so that the two claims overlap
	// by construction, not by the luck of the scheduler. It has no row in
	// the fault table: nothing fails there.
	ClaimLocked Point = "claim-locked"
	// IdemChecked is the other interleaving point: the order service
	// looked its idempotency record up and found none, and has not begun
	// the order transaction. concurrentDuplicates holds two replicas of the
	// service there until both arrived, so that two transactions with one
	// key race in the database, where only its unique key can stop the
	// second (each replica's own in-flight guard cannot).
	IdemChecked Point = "idem-checked"
	// IntentInsert is a place to aim at: the order transaction has written
	// the order, its lines and its idempotency record, and is about to
	// write the outbox intent. The chaos nemesis stops the order service
	// there (conn-kill aimed at it) and drops its database connections,
	// so that the transaction fails at its last write.
	IntentInsert Point = "intent-insert"
	// TakeoverPublished is a place to aim at: the relay published a round
	// that holds a takeover (a claim of a row whose lease ran out) and has
	// not marked it. The chaos nemesis holds a relay there while the
	// relay it took the row from, paused past its lease, wakes and marks.
	TakeoverPublished Point = "takeover-published"
)

// Injection is how a fault is brought about.
type Injection string

// Injections.
const (
	// InjectHook: an in-process hook makes the actor abandon the operation
	// as if it had died there; no signal, no process dies.
	InjectHook Injection = "in-process hook"
	// InjectSignal: the actor runs as its own OS process and receives a
	// signal (SIGKILL) at the point.
	InjectSignal Injection = "signal"
	// InjectSQL: a real database error provoked by data or a statement.
	InjectSQL Injection = "SQL"
	// InjectBroker: the broker is told to fail a request (kfake ControlKey).
	InjectBroker Injection = "broker control"
	// InjectCall: the call hook every database statement and broker call
	// of the relay and the consumer goes through fails one call
	// (runner/fault.Call), or kills its connection first.
	InjectCall Injection = "call hook"
)

// FaultRef names a row of the fault table.
type FaultRef struct {
	Point     Point
	Injection Injection
}

// Actors, as the fault table and the proof-boundary matrix name them.
const (
	ActorOrders   = "order service"
	ActorRelay    = "relay"
	ActorConsumer = "consumer"
)

// Fault is one row of the fault table: a point, how it is injected, and
// what that does and does not show. The proof-boundary matrix prints How
// for a fault that ran and CannotInfer beside it.
type Fault struct {
	FaultRef
	Actor string
	// Simulates is the real failure the fault stands for.
	Simulates string
	// How says how this tool injects it.
	How         string
	CannotInfer string
	// Simulated, on an in-process fault at a point that can also be hit
	// by a signal, is what the in-process stand-in does not show; ""
	// takes a generic text.
	Simulated string
	// NeedsPlant names the planted bug without which the point cannot
	// fire; Unreachable says what arming it shows in a run without it.
	NeedsPlant, Unreachable string
}

// Faults is the fault table: the scripted scenarios' faults, then the
// nemesis's (chaos.go).
var Faults = slices.Concat(scriptedFaults, chaosFaults)

// scriptedFaults are the faults the scenarios inject at a place of their
// script.
var scriptedFaults = []Fault{
	{
		FaultRef:  FaultRef{OutboxUniqueConflict, InjectSQL},
		Actor:     ActorOrders,
		Simulates: "a failure of the order transaction at its last write",
		How: "a real database error: the unique key on outbox.event_id rejects the order transaction's last write " +
			"because the scenario seeded a decoy row with that event_id (duplicate-key error 1062 raised by the server, not simulated)",
		CannotInfer: "other failures inside the order transaction (deadlock, lock wait timeout, connection lost before COMMIT, " +
			"server crash): only a constraint violation at the last write was provoked",
	},
	{
		FaultRef:  FaultRef{AfterPublishBeforeMark, InjectHook},
		Actor:     ActorRelay,
		Simulates: "a relay that dies after the broker acknowledged its publish and before it marks SENT",
		How: "the relay abandoned its work after the broker acknowledged the publish and before the mark " +
			"(an in-process simulated crash: no signal, no process died), then the scenario expired its lease by SQL " +
			"(lease_until moved into the past) instead of waiting for the clock",
		CannotInfer: "a lease expired by SQL is not a lease that ran out on the clock: a slow relay that is still alive when its lease " +
			"expires, clock skew between relays and database, and lease renewal were not exercised",
		Simulated: "a lease expired by SQL after an in-process crash is not a relay process killed by a signal: no OS process died, " +
			"no connection was dropped by the kernel, no client buffer was lost",
	},
	{
		FaultRef:  FaultRef{AfterPublishBeforeMark, InjectSignal},
		Actor:     ActorRelay,
		Simulates: "a relay process that dies after the broker acknowledged its publish and before it marks SENT",
		How: "the relay ran as its own OS process and was killed with SIGKILL after the broker acknowledged the publish " +
			"and before the mark",
		CannotInfer: "a lease that runs out while the old relay is still alive (a slow relay, not a dead one), clock skew between " +
			"relays and database, and lease renewal were not exercised",
	},
	{
		FaultRef:  FaultRef{AfterEffectBeforeOffsetCommit, InjectHook},
		Actor:     ActorConsumer,
		Simulates: "a consumer that dies after its effect transaction committed and before it commits the offset",
		How: "the consumer stopped after its effect transaction committed and before committing the offset " +
			"(an in-process simulated crash: its client left the group without committing; no signal, no process died)",
		CannotInfer: "rebalances driven by session timeouts under load, an offset commit refused by the broker, and a consumer " +
			"that keeps running after losing its partitions (a zombie) were not exercised",
	},
	{
		FaultRef:  FaultRef{AfterEffectBeforeOffsetCommit, InjectSignal},
		Actor:     ActorConsumer,
		Simulates: "a consumer process that dies after its effect transaction committed and before it commits the offset",
		How:       "the consumer's OS process was killed with SIGKILL after its effect transaction committed and before committing the offset",
		CannotInfer: "rebalances driven by session timeouts under load, an offset commit refused by the broker, and a consumer " +
			"that keeps running after losing its partitions (a zombie) were not exercised",
	},
	{
		FaultRef:  FaultRef{AfterClaimBeforePublish, InjectHook},
		Actor:     ActorRelay,
		Simulates: "a relay that dies holding a claim, before it publishes",
		How:       "the relay abandoned a claim before publishing (an in-process simulated crash: no signal, no process died)",
		CannotInfer: "a publish that was in flight when the relay died (the broker may or may not have appended it) was not " +
			"exercised by this point",
	},
	{
		FaultRef:  FaultRef{AfterClaimBeforePublish, InjectSignal},
		Actor:     ActorRelay,
		Simulates: "a relay process that dies holding a claim, before it publishes",
		How:       "the relay's OS process was killed with SIGKILL while holding a claim, before publishing",
		CannotInfer: "a publish that was in flight when the relay died (the broker may or may not have appended it) was not " +
			"exercised by this point",
	},
	{
		FaultRef:  FaultRef{AfterOrderCommitBeforeOutbox, InjectHook},
		Actor:     ActorOrders,
		Simulates: "an order service that dies between the order commit and a separately written intent",
		How: "the order service stopped after the order committed and before writing its outbox intent " +
			"(reachable only when the intent is written outside the order transaction, i.e. with the planted bug outbox-outside-tx)",
		CannotInfer: "nothing about the clean design, where the intent is written in the order transaction and this window does not exist",
		NeedsPlant:  "outbox-outside-tx",
		Unreachable: "armed in the order service after the order commit and before the outbox intent, but it cannot fire in this run: " +
			"the intent is written inside the order transaction, so there is no such window (it fires only with the planted bug outbox-outside-tx)",
	},
	{
		FaultRef:    FaultRef{AfterOrderCommitBeforeOutbox, InjectSignal},
		Actor:       ActorOrders,
		Simulates:   "an order service process that dies between the order commit and a separately written intent",
		How:         "the order service's OS process was killed with SIGKILL after the order committed and before writing its outbox intent",
		CannotInfer: "nothing about the clean design, where the intent is written in the order transaction and this window does not exist",
		NeedsPlant:  "outbox-outside-tx",
		Unreachable: "armed in the order service after the order commit and before the outbox intent, but it cannot fire in this run: " +
			"the intent is written inside the order transaction, so there is no such window (it fires only with the planted bug outbox-outside-tx)",
	},
	{
		FaultRef:  FaultRef{PublishRefused, InjectBroker},
		Actor:     ActorRelay,
		Simulates: "a broker that refuses a record (a validation or authorization error)",
		How: "the embedded broker answered INVALID_RECORD to the produce request carrying the intent's event id, without " +
			"appending it (kfake Fault at the protocol; the client is the relay's real producer)",
		CannotInfer: "other refusals (authorization, record too large, a topic that is gone) and how a relay handles a record " +
			"the broker refuses for ever (no dead-letter path: it is retried after every lease)",
	},
	{
		FaultRef:  FaultRef{PublishTimeout, InjectBroker},
		Actor:     ActorRelay,
		Simulates: "a broker that does not answer a produce request in time (overloaded, partitioned, paused)",
		How: "the embedded broker read the produce request carrying the intent's event id and never answered it nor appended " +
			"it (kfake ControlKey on Produce, kept until the scenario cleared it); the relay gave up after its publish timeout",
		CannotInfer: "a request that the broker appends after the relay gave up on it (here nothing was appended), and the " +
			"timing of a real network: the silence was total and lasted until the relay's timeout",
	},
	{
		FaultRef:  FaultRef{PublishAckLost, InjectBroker},
		Actor:     ActorRelay,
		Simulates: "a broker that appends a record but whose acknowledgement never reaches the relay",
		How: "the embedded broker appended the record carrying the intent's event id and answered REQUEST_TIMED_OUT to it and " +
			"to every retry of the same idempotent batch (kfake Fault, applied after the append) until the relay's publish " +
			"timeout: the record is in the log, the relay does not know it",
		CannotInfer: "replication-level causes of an unknown outcome (a leader change after the append, acks=all not met): " +
			"one broker holds the only replica",
	},
	{
		FaultRef:  FaultRef{EffectInsertError, InjectSQL},
		Actor:     ActorConsumer,
		Simulates: "a database error inside the consumer's effect transaction after its inbox insert (a constraint, a trigger, a full table)",
		How: "a real database error: a BEFORE INSERT trigger on notification that the scenario created for one event id raised " +
			"SQLSTATE 45000 on the effect insert, after the inbox insert of the same transaction; the scenario dropped it once the " +
			"consumer had failed",
		CannotInfer: "errors a consumer should retry in place rather than replay (deadlocks, lock wait timeouts) and a record that " +
			"fails for ever (no dead-letter path): this error went away after one failure",
	},
	{
		FaultRef:  FaultRef{EffectCommitKilled, InjectSQL},
		Actor:     ActorConsumer,
		Simulates: "a consumer whose database connection dies while its effect transaction commits",
		How: "the consumer's connection was killed with KILL CONNECTION from another connection after its inbox and " +
			"notification inserts and before its COMMIT reached the server (an in-process hook at that point ran the KILL and " +
			"waited until the server had ended the connection), so that its COMMIT failed on a lost connection",
		CannotInfer: "a connection lost after the server committed and before the answer arrived: here the server had rolled " +
			"the transaction back and the replay inserted again; a replay whose inbox rejects it (the commit did happen) is " +
			"modelled by the verifier but was not provoked",
	},
	{
		FaultRef:  FaultRef{CallFailed, InjectCall},
		Actor:     ActorRelay + " and " + ActorConsumer,
		Simulates: "one database statement or broker call that fails: answered with an error, its answer lost after it took effect, or its connection killed",
		How: "the call hook the relay's and the consumer's every database statement and broker call goes through failed one call: " +
			"before (the call not run; the error a server answers, MariaDB 1213 deadlock or Kafka UNKNOWN_SERVER_ERROR), after " +
			"(the call ran and took effect, then the caller got a lost connection: an unknown outcome), or kill (the database " +
			"connections killed with KILL CONNECTION from another connection and the call answered ER_CONNECTION_KILLED, or " +
			"the broker closing the client's connection of the next request, then the request sent); one run per site a clean run passed and mode, each failing once",
		CannotInfer: "two calls failing in one run, a call failing again on its retry, failures of the order service's calls, " +
			"of the actors' start and stop (the broker's ping, leaving the group), and of a site the clean run did not pass " +
			"(the relay's single mark, a batch mark after a lost lease unless the run loses one)",
	},
}

// LookupFault returns the row of the fault table for r.
func LookupFault(r FaultRef) (Fault, bool) {
	for _, f := range Faults {
		if f.FaultRef == r {
			return f, true
		}
	}
	return Fault{}, false
}

// Killable tells whether a signal can be delivered at point p (its actor can
// run as its own OS process).
func Killable(p Point) bool {
	_, ok := LookupFault(FaultRef{p, InjectSignal})
	return ok
}

// Points lists the distinct points of the fault table, in table order.
func Points() []Point {
	var out []Point
	for _, f := range Faults {
		if len(out) == 0 || out[len(out)-1] != f.Point {
			out = append(out, f.Point)
		}
	}
	return out
}

// FaultClass is a class of real failures; the proof-boundary matrix lists
// each as not run, with what that leaves unproven and what it would need,
// unless a fault that covers it fired in a scenario that ran. Key names a
// class that the matrix words apart (kill -9, actor by actor).
type FaultClass struct {
	Key, Label, NotRun, CannotInfer string
	// Needs is what a run would need to cover the class.
	Needs string
	// Covers are the fault points whose injection covers the class: it
	// is not listed as not run when one of them fired (not merely was
	// declared) in a scenario that ran.
	Covers []Point
}

// ClassKill is the key of the kill -9 class: covered, actor by actor, by
// the faults that killed an actor's process with SIGKILL.
const ClassKill = "kill"

// NotInjected lists the fault classes this tool knows of, with the faults
// that cover them.
var NotInjected = []FaultClass{
	{
		Key:    ClassKill,
		Label:  "kill -9",
		NotRun: "NOT RUN: kill -9 of an actor (SIGKILL of the order service, relay or consumer process mid-operation)",
		CannotInfer: "recovery from a real process death: in-flight state lost, a truncated event log, connections " +
			"dropped by the kernel",
		Needs: "a scenario that runs that actor as its own OS process and kills it with SIGKILL: relayKill9 does for the " +
			"relay, and a chaos run (run --scenarios chaos) with kill among its --faults for every actor",
	},
	{
		Covers: []Point{PublishAckLost, NemesisAckLost},
		Label:  "producer unknown outcome",
		NotRun: "NOT RUN: producer unknown outcome (the publish times out after the broker appended the record)",
		CannotInfer: "that an ambiguous publish, retried or re-claimed, is absorbed by the inbox; only a crash after an " +
			"acknowledged publish can have been injected",
		Needs: "a broker that appends the record and loses its acknowledgement: publishFailures (publish-ack-lost), or " +
			"a chaos run (run --scenarios chaos) with ack-lost among its --faults",
	},
	{
		Covers:      []Point{NemesisBrokerRestart},
		Label:       "broker restart",
		NotRun:      "NOT RUN: broker restart",
		CannotInfer: "producer retries during leader unavailability, and consumer-group recovery of committed offsets across a broker restart",
		Needs: "a chaos run (run --scenarios chaos) with broker-restart among its --faults, whose schedule draws it (the embedded broker " +
			"is closed and started again on its data directory)",
	},
	{
		Covers:      []Point{NemesisDBCrash},
		Label:       "database crash",
		NotRun:      "NOT RUN: database crash (server killed or restarted mid-transaction)",
		CannotInfer: "durability of committed transactions (redo log, fsync) and the fate of in-doubt transactions after a server crash",
		Needs: "a chaos run (run --scenarios chaos) on the private mariadbd with db-crash among its --faults, whose schedule draws it " +
			"(the server is killed with SIGKILL and started again; the binlog shows the crash)",
	},
	{
		Covers: []Point{NemesisNetCut},
		Label:  "network partition",
		NotRun: "NOT RUN: network partition between actors, database and broker",
		CannotInfer: "a relay cut off but alive while another claims its intent, and timeouts that are not failures " +
			"(the request may have succeeded)",
		Needs: "a chaos run (run --scenarios chaos) with net-cut among its --faults, whose schedule draws it (a TCP proxy between an " +
			"actor and the database or broker drops its connections for a while)",
	},
	{
		Label:       "dead-letter routing",
		NotRun:      "NOT RUN: dead-letter routing of records that can never be applied",
		CannotInfer: "handling of a poison record (bad payload, unknown order): no dead-letter path was exercised",
		Needs: "a consumer with a failure branch (a poison payload, an unknown order) and a dead-letter topic, and a " +
			"scenario that feeds it a poison record",
	},
}

// Covering tells whether the fault at p covers the class.
func (c FaultClass) Covering(p Point) bool {
	for _, x := range c.Covers {
		if x == p {
			return true
		}
	}
	return false
}
