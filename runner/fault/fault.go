// Package fault arms the points where a scenario injects a fault (declared
// in spec's fault table). Actors call Hit at each point; an unarmed point costs a map lookup.
package fault

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Point is a named place in an actor's code path (spec's fault table
// describes each).
type Point = spec.Point

// Points lists every point an in-process hook can fire at, sorted: the
// points of the fault table with an InjectHook row.
func Points() []Point {
	var ps []Point
	for _, f := range spec.Faults {
		if f.Injection == spec.InjectHook {
			ps = append(ps, f.Point)
		}
	}
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
	// Call runs the function armed with ArmFunc and goes on (or returns
	// its error): the scenario acts on the world at that point, such as
	// killing the actor's database connection from another connection.
	// In-process only.
	Call
)

// ErrCrash is returned by Hit at a point armed with Crash.
var ErrCrash = errors.New("fault injected: simulated crash")

// Injector holds the armed points. The zero value and nil are usable and
// inject nothing.
type Injector struct {
	mu    sync.Mutex
	armed map[Point]arm
	hits  map[Point]int
	call  *callArm   // the call that fails next (call.go)
	sites []CallSite // every site Call was passed, first pass first
}

type arm struct {
	action Action
	times  int // remaining; <0 = every time
	fn     func() error
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
// ArmFunc arms p to run fn (action Call) the next n times it is hit (n <
// 0: every time).
func (in *Injector) ArmFunc(p Point, n int, fn func() error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.armed == nil {
		in.armed = map[Point]arm{}
	}
	in.armed[p] = arm{action: Call, times: n, fn: fn}
}

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
	case Call:
		if err := a.fn(); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
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
