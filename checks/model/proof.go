package model

import (
	"maps"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// What the verifier's own derivation of the proof-boundary claims reads
// (checks/proof.go): every fault event by point (uncapped counts, unlike
// Faults), the nemesis's skipped draws by point, its kills with the detail
// that names the process, and the processes whose end the supervisor
// recorded as a SIGKILL.

// proofState is the Model's part for the proof-boundary claims.
type proofState struct {
	fired   map[string]int
	skipped map[string]int
	kills   []Kill
	aims    []Kill // faults of the aimed kinds (pause, conn-kill)
	// sigkilled are the pids whose process_exit says signal 9, with the
	// actor name of that incarnation.
	sigkilled map[int64]string
}

// Kill is a fault event of the nemesis at nemesis-kill: the slot it
// targeted and the detail that names the process it signalled.
type Kill struct {
	Target, Detail string
}

// maxKills bounds the kills kept and maxExits the SIGKILLed processes;
// past them Kills and SIGKILLed say they are partial.
const (
	maxKills = 4096
	maxExits = 1 << 16
)

// noteProof counts a fault event for the claims.
func (m *Model) noteProof(e *evidence.Event) {
	if m.fired == nil {
		m.fired = map[string]int{}
	}
	if len(m.fired) < maxFaults || m.fired[e.Point] > 0 {
		m.fired[strings.Clone(e.Point)]++
	}
	if e.Point == "nemesis-kill" && len(m.kills) < maxKills {
		m.kills = append(m.kills, Kill{Target: strings.Clone(e.Target), Detail: strings.Clone(e.Detail)})
	}
	if (e.Point == "nemesis-pause" || e.Point == "nemesis-conn-kill") && len(m.aims) < maxKills {
		m.aims = append(m.aims, Kill{Target: strings.Clone(e.Point), Detail: strings.Clone(e.Detail)})
	}
}

// stepSkipped: the nemesis drew a fault and found nothing to hit. Its
// point must be declared, as a fault's (fault-undeclared).
func (m *Model) stepSkipped(e *evidence.Event, src Source) {
	if !m.faultPoints[e.Point] {
		m.violate(RuleFaultUndeclared, src, e.EventID, "a fault was skipped at %q, which the scenario does not declare", e.Point)
	}
	if m.skipped == nil {
		m.skipped = map[string]int{}
	}
	if len(m.skipped) < maxFaults || m.skipped[e.Point] > 0 {
		m.skipped[strings.Clone(e.Point)]++
	}
}

// noteExit keeps a process that ended by SIGKILL.
func (m *Model) noteExit(e *evidence.Event) {
	if e.Kind != evidence.KindProcessExit || e.PID == nil || !strings.Contains(e.Detail, "signal 9") {
		return
	}
	if m.sigkilled == nil {
		m.sigkilled = map[int64]string{}
	}
	if len(m.sigkilled) < maxExits {
		m.sigkilled[*e.PID] = strings.Clone(e.Target)
	}
}

// FaultsByPoint returns how many fault events each point has.
func (m *Model) FaultsByPoint() map[string]int { return maps.Clone(m.fired) }

// SkippedByPoint returns how many fault_skipped events each point has.
func (m *Model) SkippedByPoint() map[string]int { return maps.Clone(m.skipped) }

// Kills returns the nemesis's kills, in log order (at most maxKills).
func (m *Model) Kills() []Kill { return append([]Kill(nil), m.kills...) }

// Aims returns the faults of the aimed kinds (Target holds the point),
// in log order (at most maxKills).
func (m *Model) Aims() []Kill { return append([]Kill(nil), m.aims...) }

// SIGKILLed returns the actor name of the process pid if the supervisor
// recorded its end as a SIGKILL.
func (m *Model) SIGKILLed(pid int64) (string, bool) {
	t, ok := m.sigkilled[pid]
	return t, ok
}
