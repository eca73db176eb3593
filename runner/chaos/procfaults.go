package chaos

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The faults of a slot's process: kill and pause.

// kill sends SIGKILL to the slot's running process; the supervisor
// records its end and starts it again.
func (r *run) kill(f nemesis.Fault) (string, error) {
	s := r.slot(f.Target)
	p, name, err := s.signal(syscall.SIGKILL)
	if err != nil {
		return "", nil // between two incarnations: nothing to kill
	}
	return fmt.Sprintf("SIGKILL to %s (pid %d); the supervisor starts it again", name, p.Pid()), nil
}

// pause stops the relay's process past its lease, where it holds
// published claims it has not marked: aimed at after-publish-before-mark,
// it wakes up a zombie whose marks carry stale tokens. When the relay
// does not pass there within the aim's window, it is stopped with SIGSTOP
// wherever it is. The heal sends SIGCONT to that same process.
//
// An aimed pause also arms every other relay at takeover-published: the
// one that takes the paused relay's rows over stops holding its takeover,
// published and not marked. The heal then wakes the zombie first and the
// taker takeoverHold later, so that the zombie's mark meets a row CLAIMED
// under a newer token (with the relays' shared claim id: the same
// claim_id, another claim_version), the case a compare-and-set that checks
// less than the whole token gets wrong.
func (r *run) pause(f nemesis.Fault) (string, heal, error) {
	s := r.slot(f.Target)
	if p, _ := s.running(); p == nil || processState(p.Pid()) == "T" || r.holding(p) {
		return "", nil, nil // none runs, or another fault holds it
	}
	p, name, aimed, miss := r.aim(s, spec.AfterPublishBeforeMark)
	if p == nil {
		return "", nil, nil
	}
	var detail string
	var takers []taker
	if aimed != "" {
		detail = fmt.Sprintf("%s for %v, longer than its lease %v", aimed, f.For.Round(time.Millisecond), nemesis.PauseLease)
		armed := time.Now()
		for _, o := range r.slots {
			if o == s || !r.t.Aimer.StopsAt(o.name, spec.TakeoverPublished) {
				continue
			}
			if tp, tname, _, miss := r.arm(o, spec.TakeoverPublished); tp != nil && miss == "" {
				// Armed, it is this fault's: no other fault stops or
				// wakes it until the heal lets it go.
				r.hold(tp, true)
				takers = append(takers, taker{tp, tname, r.armedUntil(armed, spec.TakeoverPublished)})
			}
		}
	} else {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			return "", nil, nil // it ended meanwhile
		}
		time.Sleep(5 * time.Millisecond)
		detail = fmt.Sprintf("SIGSTOP to %s (pid %d, state %q after it) for %v, longer than its lease %v%s",
			name, p.Pid(), processState(p.Pid()), f.For.Round(time.Millisecond), nemesis.PauseLease, miss)
	}
	r.hold(p, true)
	return detail, func(context.Context) (string, error) {
		var held []taker
		for _, t := range takers {
			if processState(t.p.Pid()) == "T" {
				held = append(held, t)
			}
		}
		defer func() {
			r.hold(p, false)
			for _, t := range takers {
				r.hold(t.p, false)
			}
		}()
		out := fmt.Sprintf("SIGCONT to %s (pid %d) after %v stopped", name, p.Pid(), f.For.Round(time.Millisecond))
		if err := p.Signal(syscall.SIGCONT); err != nil {
			out = fmt.Sprintf("SIGCONT to %s (pid %d) not delivered: %v (the process ended meanwhile)", name, p.Pid(), err)
		}
		if len(held) > 0 {
			time.Sleep(takeoverHold)
		}
		for _, t := range held {
			out += fmt.Sprintf("; %s (pid %d) had stopped itself at %s, holding its takeover unmarked, and got SIGCONT %v later",
				t.name, t.p.Pid(), spec.TakeoverPublished, takeoverHold)
			_ = t.p.Signal(syscall.SIGCONT)
		}
		// A taker whose arm is still on may stop after this heal: wait
		// for its window to end, and wake it if it stopped.
		for _, t := range takers {
			if slices.Contains(held, t) {
				continue
			}
			if _, ok := waitStopped(t.p, t.until); ok {
				out += fmt.Sprintf("; %s (pid %d) stopped itself at %s after the zombie woke, and got SIGCONT", t.name, t.p.Pid(),
					spec.TakeoverPublished)
				_ = t.p.Signal(syscall.SIGCONT)
			}
		}
		return out, nil
	}, nil
}

// hold records that a lasting fault keeps p stopped (on) or no longer
// (off).
func (r *run) hold(p Process, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.held[p.Pid()] = true
	} else {
		delete(r.held, p.Pid())
	}
}

// holding tells whether a lasting fault keeps p stopped.
func (r *run) holding(p Process) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[p.Pid()]
}

// taker is a relay armed at takeover-published while another relay is
// paused, until its arm has surely ended.
type taker struct {
	p     Process
	name  string
	until time.Time
}

// takeoverHold is how long a taker held at takeover-published stays
// stopped after the zombie woke: time for the zombie's mark to arrive
// first.
const takeoverHold = 250 * time.Millisecond
