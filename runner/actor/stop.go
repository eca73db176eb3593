package actor

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Stops aimed by a signal (--stop-at): the chaos nemesis aims a fault at a
// place in an actor's code path, not at a random instant. SIGUSR1 arms the
// first --stop-at point, SIGUSR2 the second, signal 35 (SIGRTMIN+1 in
// glibc's numbering) the third: the process stops itself there (SIGSTOP to
// itself) at its next pass within the point's window (StopWindow), and
// goes on from there when it receives SIGCONT. A pass after the window, or
// no pass, leaves it running: the nemesis then falls back on an unaimed
// fault.

// StopArmWindow is how long a signal arms a stop point.
const StopArmWindow = time.Second

// StopWindow is how long a signal arms p: StopArmWindow, and twice that
// for TakeoverPublished, which the nemesis arms when another relay's
// lease starts to run out, well before the takeover.
func StopWindow(p fault.Point) time.Duration {
	if p == spec.TakeoverPublished {
		return 2 * StopArmWindow
	}
	return StopArmWindow
}

// StopSignals are the signals that arm the first, the second and the
// third --stop-at point.
var StopSignals = []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.Signal(35)}

// stopPoints are the points --stop-at takes: those where a process stopped
// in place leaves something for the nemesis to act on.
var stopPoints = []fault.Point{spec.AfterPublishBeforeMark, spec.ClaimLocked, spec.EffectCommitKilled, spec.IntentInsert,
	spec.TakeoverPublished}

// parseStopAt checks the --stop-at points.
func parseStopAt(points []string) ([]fault.Point, error) {
	if len(points) > len(StopSignals) {
		return nil, fmt.Errorf("%w: --stop-at given %d times, at most %d (one per signal)", ErrUsage, len(points), len(StopSignals))
	}
	var out []fault.Point
	for _, s := range points {
		p := fault.Point(s)
		if !slices.Contains(stopPoints, p) {
			return nil, fmt.Errorf("%w: --stop-at %q: not a point to stop at (valid: %v)", ErrUsage, s, stopPoints)
		}
		out = append(out, p)
	}
	return out, nil
}

// armStopsOnSignal arms points[i] on StopSignals[i] until the returned
// function is called.
func armStopsOnSignal(faults *fault.Injector, points []fault.Point) (stop func()) {
	if len(points) == 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 4)
	sigs := make([]os.Signal, len(points))
	for i := range points {
		sigs[i] = StopSignals[i]
	}
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				for i, p := range points {
					if sig == StopSignals[i] {
						faults.ArmFunc(p, 1, stopSelf(time.Now().Add(StopWindow(p))))
					}
				}
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// stopSelf stops the whole process where it is, if it passes before
// deadline; SIGCONT resumes it right there.
func stopSelf(deadline time.Time) func() error {
	return func() error {
		if time.Now().After(deadline) {
			return nil
		}
		return stopThisThread()
	}
}
