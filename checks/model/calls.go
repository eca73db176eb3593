package model

import (
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The call sweep (spec's call-failed fault, the sweep suite) fails one
// database statement or broker call of the relay or the consumer per run.
// The model keeps, in history order, each injection (the scenario's fault
// event at call-failed naming the site and the mode) and each record an
// actor made of a failed call (its call_failed event naming the site
// and the outcome it read, a refused or unknown publish, a rolled
// back or unknown effect transaction), so that the sweep's derivation can
// hold every injection to the record its actor made of it.

// The sites of the records that name no site themselves.
const (
	SitePublish = "relay.publish"
	SiteEffect  = "consumer.effect" // an effect transaction, any of its calls
)

// Outcomes a record reads from a failed call.
const (
	CallAnswered = "answered" // the call did not take effect (rolled back, refused)
	CallUnknown  = "unknown"  // it may have taken effect
)

// SiteUnlogged is the site of a claim or a mark the binlog witness
// settled: it committed and its relay did not log it (the checker's
// resolved events, actor WitnessActor).
const SiteUnlogged = "relay.unlogged"

// WitnessActor is the actor of the events the checker resolves from the
// binlog witness (checks.ResolvedActor).
const WitnessActor = "witness"

// CallEvent is one injection or one record of a failed call.
type CallEvent struct {
	Actor string
	// Inject is true for an injection (Mode set), false for an actor's
	// record of a failure (Outcome set).
	Inject        bool
	Site          string
	Mode, Outcome string
}

// stepCallFailed: an actor's record of a call that failed. It changes no
// state (the call did not take effect, or whether it did shows in what
// follows); noteCall keeps it for the sweep's derivation.
func (m *Model) stepCallFailed(*evidence.Event, Source) {}

// maxCalls bounds the calls kept: a history with more keeps the first.
const maxCalls = 1 << 16

// noteCall keeps e when it is an injection or a record of a failed call.
func (m *Model) noteCall(e *evidence.Event) {
	if len(m.calls) >= maxCalls {
		return
	}
	c := CallEvent{Actor: strings.Clone(e.Actor)}
	switch {
	case e.Kind == evidence.KindFault && e.Point == "call-failed":
		c.Site, c.Inject, c.Mode = strings.Clone(e.Target), true, strings.Clone(e.Reason)
	case e.Kind == evidence.KindCallFailed:
		c.Site, c.Outcome = strings.Clone(e.Target), strings.Clone(e.Reason)
	case e.Kind == evidence.KindPublish && e.Err != "":
		c.Site, c.Outcome = SitePublish, CallAnswered
	case e.Kind == evidence.KindPublishUnknown:
		c.Site, c.Outcome = SitePublish, CallUnknown
	case e.Kind == evidence.KindEffectRolledBack:
		c.Site, c.Outcome = SiteEffect, CallAnswered
	case e.Kind == evidence.KindCommitUnknown:
		c.Site, c.Outcome = SiteEffect, CallUnknown
	case e.Actor == WitnessActor && (e.Kind == evidence.KindClaim || e.Kind == evidence.KindMark):
		c.Site, c.Outcome = SiteUnlogged, strings.Clone(string(e.Kind)+" of "+e.EventID)
	default:
		return
	}
	m.calls = append(m.calls, c)
}

// Calls returns the injections and records of failed calls, in history
// order.
func (m *Model) Calls() []CallEvent { return append([]CallEvent(nil), m.calls...) }
