package fault

import (
	"fmt"
	"slices"
)

// Every database statement and broker call of the relay and the consumer
// goes through Call, named by its site ("relay.claim.update",
// "consumer.offset.commit"): the one hook of the call sweep (spec's
// CallFailed row, the sweep suite). Unarmed, Call runs the call and
// records the site; armed at a site, the next call there fails once in
// the armed mode. A test parses the actors' source and fails on a call
// that does not go through Call, so that a new call is swept without a
// new scenario.

// CallKind says what a call talks to: the database or the broker.
type CallKind string

// Call kinds.
const (
	DB     CallKind = "db"
	Broker CallKind = "broker"
)

// CallMode is how an armed call fails.
type CallMode string

// Call modes.
const (
	// CallBefore: the call fails with an error before it took effect (the
	// server or the broker answered with an error; the call is not run).
	CallBefore CallMode = "before"
	// CallAfter: the call took effect, then the caller gets an error: its
	// outcome is unknown to the caller (the answer was lost).
	CallAfter CallMode = "after"
	// CallKill: the connection the call goes over is killed from outside
	// as the call runs (KILL CONNECTION for the database, the broker
	// closing the client's connection): the failer kills it and either
	// returns the error the call gets (the database's answer to a
	// statement killed under it) or nil, and the call runs.
	CallKill CallMode = "kill"
)

// CallModes are the modes in sweep order.
var CallModes = []CallMode{CallBefore, CallAfter, CallKill}

// ParseCallMode checks a mode name.
func ParseCallMode(s string) (CallMode, error) {
	if m := CallMode(s); slices.Contains(CallModes, m) {
		return m, nil
	}
	return "", fmt.Errorf("unknown call mode %q (valid: before, after, kill)", s)
}

// CallSite is one site as the hook saw it.
type CallSite struct {
	Name string
	Kind CallKind
}

// CallFailer makes an armed call fail in its mode. Before and After return
// the error the caller gets (After after the call ran); Kill kills the
// call's connection before it runs and returns nil (or an error of its own,
// which the caller gets instead of running the call).
type CallFailer func(site CallSite, mode CallMode) error

type callArm struct {
	site  string
	mode  CallMode
	fail  CallFailer
	fired bool
}

// ArmCall arms site to fail once in mode, by fail. It replaces the call
// armed before (one call fails at a time).
func (in *Injector) ArmCall(site string, mode CallMode, fail CallFailer) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.call = &callArm{site: site, mode: mode, fail: fail}
}

// DisarmCall removes the armed call and tells whether it fired.
func (in *Injector) DisarmCall() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	fired := in.call != nil && in.call.fired
	in.call = nil
	return fired
}

// CallSites returns every site Call was passed so far, in the order each
// was first passed (the sweep's discovery).
func (in *Injector) CallSites() []CallSite {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.sites)
}

// Call runs do, the call at site, and returns its error. When site is
// armed (ArmCall) and has not fired yet, it fails there once in the armed
// mode instead: before, do does not run and the failer's error is
// returned; after, do runs and then the failer's error is returned (when
// do fails by itself, its error is returned and the site stays armed); kill, the failer kills the connection and
// then do runs and its error is returned. A nil Injector runs do.
func (in *Injector) Call(kind CallKind, site string, do func() error) error {
	if in == nil {
		return do()
	}
	s := CallSite{Name: site, Kind: kind}
	in.mu.Lock()
	if !slices.Contains(in.sites, s) {
		in.sites = append(in.sites, s)
	}
	a := in.call
	armed := a != nil && !a.fired && a.site == site
	if armed {
		a.fired = true
	}
	in.mu.Unlock()
	if !armed {
		return do()
	}
	switch a.mode {
	case CallBefore:
		return a.fail(s, a.mode)
	case CallAfter:
		if err := do(); err != nil {
			// The call failed by itself: nothing was injected, and the
			// site's next call fails instead.
			in.mu.Lock()
			a.fired = false
			in.mu.Unlock()
			return err
		}
		return a.fail(s, a.mode)
	default:
		if err := a.fail(s, a.mode); err != nil {
			return err
		}
		return do()
	}
}
