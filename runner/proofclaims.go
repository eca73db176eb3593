package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The runner's claims for the proof-boundary matrix (evidence.ProofClaims):
// what each declared fault of each scenario that ran did, read back from
// the event logs the run wrote (still in the staging directory). The
// verifier derives the same claims from the bundle with code of its own
// (checks/proof.go) and fails the evidence where they differ; nothing here
// is shared with it but the catalogue (spec) and the rendering.
//
// A fault counts as fired when the logs record its injection:
//   - a fault event at its point (the actor or scenario that injected it
//     writes one once it took effect);
//   - outbox-unique-conflict, a real duplicate-key error rather than a
//     hook: an order transaction rolled back on error 1062 of a decoy's
//     event id (seeded by the scenario);
//   - nemesis-kill, only when the supervisor recorded the end of the
//     signalled process (its pid) as a SIGKILL.
//
// With the planted bug proof-from-config the runner claims instead what
// the scenarios were configured to do: every declared fault fired once.
// It is the negative control of the verifier's derivation.

// proofClaims derives the claims of ev's scenarios from their logs in the
// staging directory.
func (rs *runScope) proofClaims(ev *evidence.Evidence) *evidence.ProofClaims {
	out := &evidence.ProofClaims{Faults: []evidence.FaultClaim{}}
	for _, sc := range ev.Scenarios {
		if sc.Status == evidence.StatusNotRun {
			continue
		}
		if rs.opts.Plant == plant.ProofFromConfig {
			out.Faults = append(out.Faults, fromConfig(sc)...)
			continue
		}
		out.Faults = append(out.Faults, rs.scenarioClaims(ev, sc)...)
	}
	return out
}

// fromConfig is the planted overclaim: every declared fault fired once,
// and every signal killed its actor.
func fromConfig(sc evidence.Scenario) []evidence.FaultClaim {
	s, _ := spec.Lookup(sc.ID)
	var out []evidence.FaultClaim
	for _, p := range sc.FaultPoints {
		c := evidence.FaultClaim{Scenario: sc.ID, Point: p, Fired: 1, Killed: []string{}}
		for _, r := range s.Faults {
			if f, ok := spec.LookupFault(r); ok && r.Point == spec.Point(p) && r.Injection == spec.InjectSignal &&
				!strings.HasPrefix(p, spec.NemesisPrefix) {
				c.Killed = append(c.Killed, f.Actor)
			}
		}
		out = append(out, c)
	}
	return out
}

// tally is what one scenario's logs record of its faults.
type tally struct {
	fired, skipped map[string]int
	missed         map[string]int  // aimed kinds that struck unaimed
	decoys         map[string]bool // event ids of seeded decoy intents
	dupRollbacks   []string        // event ids of order rollbacks on 1062
	kills          []evidence.Event
	sigkilled      map[int64]bool // pids that ended by SIGKILL
	nemesisKilled  []string       // actors whose kill the process record shows
}

// scenarioClaims reads sc's logs and claims each declared point.
func (rs *runScope) scenarioClaims(ev *evidence.Evidence, sc evidence.Scenario) []evidence.FaultClaim {
	t := &tally{fired: map[string]int{}, skipped: map[string]int{}, missed: map[string]int{}, decoys: map[string]bool{}, sigkilled: map[int64]bool{}}
	for _, l := range sc.Logs {
		rel := strings.TrimPrefix(l.Path, rs.base+"/")
		if err := t.read(filepath.Join(rs.stage, filepath.FromSlash(rel))); err != nil {
			// An unreadable log claims nothing: the verifier, which reads
			// the same file, says what is wrong with it.
			rs.opts.Logger.Warn("proof claims: a log could not be read", "scenario", sc.ID, "log", l.Path, "err", err)
		}
	}
	for _, id := range t.dupRollbacks {
		if t.decoys[id] {
			t.fired[string(spec.OutboxUniqueConflict)]++
		}
	}
	// A kill counts once the process record shows its pid ended by SIGKILL.
	killed := map[string]bool{}
	t.fired[string(spec.NemesisKill)] = 0
	for _, k := range t.kills {
		m := sigkillTo.FindStringSubmatch(k.Detail)
		if m == nil {
			continue
		}
		pid, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || !t.sigkilled[pid] {
			continue
		}
		t.fired[string(spec.NemesisKill)]++
		killed[slotActor(k.Target)] = true
	}
	s, _ := spec.Lookup(sc.ID)
	var out []evidence.FaultClaim
	for _, p := range sc.FaultPoints {
		c := evidence.FaultClaim{Scenario: sc.ID, Point: p, Fired: t.fired[p], Skipped: t.skipped[p], Missed: t.missed[p],
			Killed: []string{}}
		if p == string(spec.NemesisKill) {
			c.Killed = actorsIn(killed)
		} else if c.Fired > 0 && ev.Environment.ActorProcesses {
			for _, r := range s.Faults {
				if f, ok := spec.LookupFault(r); ok && string(r.Point) == p && r.Injection == spec.InjectSignal &&
					!strings.HasPrefix(p, spec.NemesisPrefix) && !slices.Contains(c.Killed, f.Actor) {
					c.Killed = append(c.Killed, f.Actor)
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// aimed are the nemesis kinds that aim at a point in the target's code.
var aimed = map[string]bool{string(spec.NemesisPause): true, string(spec.NemesisConnKill): true}

// sigkillTo finds the process a kill signalled: "SIGKILL to relay-1.2 (pid 123)".
var sigkillTo = regexp.MustCompile(`^fault #\d+ at \S+: SIGKILL to \S+ \(pid (\d+)\)`)

// slotActor names the actor of a chaos slot: relay-1 is a relay.
func slotActor(slot string) string {
	role, _, _ := strings.Cut(slot, "-")
	switch role {
	case "relay":
		return spec.ActorRelay
	case "consumer":
		return spec.ActorConsumer
	}
	return spec.ActorOrders
}

// actorsIn returns the actors of set in the matrix's order.
func actorsIn(set map[string]bool) []string {
	out := []string{}
	for _, a := range []string{spec.ActorConsumer, spec.ActorOrders, spec.ActorRelay} {
		if set[a] {
			out = append(out, a)
		}
	}
	return out
}

// read tallies one log. A line that does not decode (the last line of a
// killed process) is passed over: it records nothing that took effect.
func (t *tally) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e evidence.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Kind {
		case evidence.KindFault:
			if e.Point != string(spec.NemesisKill) {
				t.fired[e.Point]++
				// An aimed fault says where its target stopped itself;
				// one that missed its aim struck wherever it was.
				if aimed[e.Point] && !strings.Contains(e.Detail, "stopped itself at") {
					t.missed[e.Point]++
				}
			} else {
				t.kills = append(t.kills, e)
			}
		case evidence.KindFaultSkipped:
			t.skipped[e.Point]++
		case evidence.KindSeedOutbox:
			// A decoy is a row no order owns (order id -1).
			if e.OrderID != nil && *e.OrderID == -1 {
				t.decoys[e.EventID] = true
			}
		case evidence.KindOrderRolledBack:
			if strings.Contains(e.Err, "Error 1062") {
				t.dupRollbacks = append(t.dupRollbacks, e.EventID)
			}
		case evidence.KindProcessExit:
			if e.PID != nil && strings.Contains(e.Detail, "signal 9") {
				t.sigkilled[*e.PID] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
