// Package fault names the points where a scenario injects a fault and arms
// them. Actors call Hit at each point; an unarmed point costs a map lookup.
package fault

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
)

// Point is a named place in an actor's code path.
type Point string

// The fault points of the system under test.
const (
	// AfterPublishBeforeMark: the relay's publish was acknowledged, the
	// mark has not run (the send boundary).
	AfterPublishBeforeMark Point = "after-publish-before-mark"
	// AfterEffectBeforeOffsetCommit: the consumer's effect transaction
	// committed, the offset has not been committed (the ack boundary).
	AfterEffectBeforeOffsetCommit Point = "after-effect-before-offset-commit"
	// AfterOrderCommitBeforeOutbox: only reachable with the planted bug
	// "outbox-outside-tx": the order committed, its intent not yet written.
	AfterOrderCommitBeforeOutbox Point = "after-order-commit-before-outbox"
	// AfterClaimBeforePublish: the relay holds a claim and has not
	// published.
	AfterClaimBeforePublish Point = "after-claim-before-publish"
)

// Points lists every point, sorted.
func Points() []Point {
	ps := []Point{AfterPublishBeforeMark, AfterEffectBeforeOffsetCommit, AfterOrderCommitBeforeOutbox, AfterClaimBeforePublish}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// Action is what an armed point does when hit.
type Action int

const (
	// Crash makes Hit return ErrCrash: the actor abandons the operation
	// as if its process had died at that point (no cleanup, no more work).
	Crash Action = iota + 1
	// Kill sends SIGKILL to the current process: only for actors that run
	// as their own OS process.
	Kill
)

// ErrCrash is returned by Hit at a point armed with Crash.
var ErrCrash = errors.New("fault injected: simulated crash")

// Injector holds the armed points. The zero value and nil are usable and
// inject nothing.
type Injector struct {
	mu    sync.Mutex
	armed map[Point]arm
	hits  map[Point]int
}

type arm struct {
	action Action
	times  int // remaining; <0 = every time
}

// Arm makes the next n hits of p perform a (n < 0: every hit).
func (in *Injector) Arm(p Point, a Action, n int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.armed == nil {
		in.armed = map[Point]arm{}
	}
	in.armed[p] = arm{action: a, times: n}
}

// Disarm removes p.
func (in *Injector) Disarm(p Point) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.armed, p)
}

// Hits returns how many times p fired.
func (in *Injector) Hits(p Point) int {
	if in == nil {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.hits[p]
}

// Hit is called by an actor at point p. It returns nil when p is not armed,
// ErrCrash (wrapped with the point) for Crash, and does not return for Kill.
func (in *Injector) Hit(p Point) error {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	a, ok := in.armed[p]
	if ok && a.times != 0 {
		if a.times > 0 {
			a.times--
			in.armed[p] = a
		}
		if in.hits == nil {
			in.hits = map[Point]int{}
		}
		in.hits[p]++
	} else {
		ok = false
	}
	in.mu.Unlock()
	if !ok {
		return nil
	}
	switch a.action {
	case Kill:
		pr, _ := os.FindProcess(os.Getpid())
		_ = pr.Kill()
		select {} // SIGKILL cannot be caught; wait for it
	default:
		return fmt.Errorf("%s: %w", p, ErrCrash)
	}
}

// Parse checks a point name.
func Parse(s string) (Point, error) {
	for _, p := range Points() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown fault point %q", s)
}
