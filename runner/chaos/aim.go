package chaos

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Aimed faults: the nemesis arms a process to stop itself at a place of
// its code path (through the Aimer) and waits until it stopped there, read
// from /proc. Where each fault aims is the engine's (aimsOf, pause); how a
// process is armed is the Aimer's.

// aimsOf is where conn-kill aims at each role: inside the relay's claim
// transaction, inside the consumer's effect transaction before its
// COMMIT, inside the order transaction before its last write (the
// intent).
var aimsOf = map[string]fault.Point{
	"relay":    spec.ClaimLocked,
	"consumer": spec.EffectCommitKilled,
	"orders":   spec.IntentInsert,
}

// Aims are the points the engine may aim at in the processes of slot, in
// a fixed order: a relay's pause at after-publish-before-mark, its
// conn-kill at claim-locked, and its hold at takeover-published while
// another relay is paused; a consumer's and the order service's conn-kill
// (aimsOf). An Aimer that stops a slot's processes at all of them gets
// every fault on it aimed.
func Aims(slot string) []fault.Point {
	switch role := roleOf(slot); role {
	case "relay":
		return []fault.Point{spec.AfterPublishBeforeMark, aimsOf[role], spec.TakeoverPublished}
	case "consumer", "orders":
		return []fault.Point{aimsOf[role]}
	}
	return nil
}

// roleOf is the role of a slot: "relay" for "relay-1".
func roleOf(slot string) string {
	role, _, _ := strings.Cut(slot, "-")
	return role
}

// aim arms the slot's running process to stop itself at point and waits
// until it stopped itself there. It returns the process (nil: none runs)
// and, when it stopped, what happened; otherwise miss says why the aim
// missed.
func (r *run) aim(s *slot, point fault.Point) (p Process, name, aimed, miss string) {
	p, name, by, miss := r.arm(s, point)
	if p == nil || miss != "" {
		return p, name, "", miss
	}
	if took, ok := waitStopped(p, r.armedUntil(time.Now(), point)); ok {
		return p, name, fmt.Sprintf("%s (pid %d) stopped itself at %s, %v after %v armed it (state \"T\")",
			name, p.Pid(), point, took.Round(time.Millisecond), by), ""
	}
	return p, name, "", fmt.Sprintf(" (%s did not pass %s within %v of %v)", name, point, r.t.Aimer.Window(point), by)
}

// arm arms the slot's running process to stop itself at point; miss says
// why it was not armed (p nil: no process runs).
func (r *run) arm(s *slot, point fault.Point) (p Process, name, by, miss string) {
	lp, name := s.running()
	if lp == nil {
		return nil, "", "", ""
	}
	if processState(lp.Pid()) == "T" || r.holding(lp) {
		return lp, name, "", fmt.Sprintf(" (%s is held by another fault)", name)
	}
	if r.t.Aimer == nil || !r.t.Aimer.StopsAt(s.name, point) {
		return lp, name, "", fmt.Sprintf(" (%s does not stop at %s)", name, point)
	}
	by, miss = r.t.Aimer.Arm(lp, name, s.name, point)
	return lp, name, by, miss
}

// armedUntil is when an arm of point sent at t has surely ended: the
// process's own window starts when it receives the arming, a little
// later.
func (r *run) armedUntil(t time.Time, point fault.Point) time.Time {
	return t.Add(r.t.Aimer.Window(point) + 100*time.Millisecond)
}

// waitStopped waits until p is stopped (state T), or until; it returns
// how long it waited.
func waitStopped(p Process, until time.Time) (time.Duration, bool) {
	t0 := time.Now()
	for {
		if processState(p.Pid()) == "T" {
			return time.Since(t0), true
		}
		if time.Now().After(until) {
			return time.Since(t0), false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// processState reads the state letter of pid from /proc ("T" stopped,
// "S" sleeping, ...; "" when it cannot be read).
func processState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}
