package evidence

import (
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// chaosEvidence is a run of the chaos scenario alone, whose claims the
// test sets.
func chaosEvidence(claims ...FaultClaim) (*Evidence, *ProofClaims) {
	ev := baseEvidence()
	ev.Environment.ActorProcesses = true
	chaos, _ := spec.Lookup("chaos")
	ev.Scenarios = []Scenario{{ID: "chaos", Suite: "EXT", Boundary: BoundaryNone, Status: StatusPass,
		FaultPoints: chaos.FaultPoints()}}
	c := &ProofClaims{Faults: []FaultClaim{}}
	for _, p := range ev.Scenarios[0].FaultPoints {
		f := FaultClaim{Scenario: "chaos", Point: p, Killed: []string{}}
		for _, g := range claims {
			if g.Point == p {
				f = g
			}
		}
		c.Faults = append(c.Faults, f)
	}
	return ev, c
}

// TestProofSentences: each sentence the matrix generates, word for word
// (one golden line per sentence): lists joined once, actors named once.
func TestProofSentences(t *testing.T) {
	for _, tc := range []struct {
		name     string
		claims   []FaultClaim
		category string
		want     string
	}{
		{"a fault that fired once", []FaultClaim{{Scenario: "chaos", Point: "nemesis-broker-restart", Fired: 1}}, CategoryFaults,
			"nemesis-broker-restart (in chaos), once: the embedded broker was closed (writing its state into its data directory) " +
				"and started again on the same data directory and port; records and group offsets survive, every connection was dropped"},
		{"a fault that fired several times", []FaultClaim{{Scenario: "chaos", Point: "nemesis-db-crash", Fired: 3}}, CategoryFaults,
			"nemesis-db-crash (in chaos), 3 times: the private mariadbd was killed with SIGKILL and started again on its data " +
				"directory (InnoDB crash recovery); every connection was dropped"},
		{"an aimed fault that missed its aim", []FaultClaim{{Scenario: "chaos", Point: "nemesis-pause", Fired: 2, Missed: 1}}, CategoryFaults,
			"nemesis-pause (in chaos), 2 times (1 of them missed their aim and struck wherever the process was): the nemesis sent " +
				"SIGSTOP to a relay for longer than its lease, then SIGCONT: its claims were taken over meanwhile, and its marks must hit 0 rows"},
		{"kinds the schedule did not draw, one", firedAllBut("nemesis-pause"), CategoryNotRun, "NOT RUN: nemesis-pause (in chaos): declared, but the schedule did not draw it (the seed and --faults choose)"},
		{"kinds the schedule did not draw, several", firedAllBut("nemesis-kill", "nemesis-pause", "nemesis-db-crash"), CategoryNotRun,
			"NOT RUN: nemesis-kill, nemesis-pause and nemesis-db-crash (in chaos): declared, but the schedule did not draw them " +
				"(the seed and --faults choose)"},
		{"a kind drawn and skipped", []FaultClaim{{Scenario: "chaos", Point: "nemesis-kill", Skipped: 2}}, CategoryNotRun,
			"NOT RUN: nemesis-kill (in chaos): drawn by the schedule 2 times and skipped each time: it found nothing to hit " +
				"(no process in the slot, no open transaction, or no server of the run's own to crash)"},
		{"kill -9, one actor killed", []FaultClaim{{Scenario: "chaos", Point: "nemesis-kill", Fired: 1, Killed: []string{"relay"}}}, CategoryNotRun,
			"NOT RUN: kill -9 of the order service or the consumer (SIGKILL mid-operation; only the relay was killed)"},
		{"kill -9, two actors killed", []FaultClaim{{Scenario: "chaos", Point: "nemesis-kill", Fired: 2, Killed: []string{"consumer", "relay"}}},
			CategoryNotRun, "NOT RUN: kill -9 of the order service (SIGKILL mid-operation; only the relay and the consumer were killed)"},
		{"kill -9, nothing killed", nil, CategoryNotRun,
			"NOT RUN: kill -9 of an actor (SIGKILL of the order service, relay or consumer process mid-operation)"},
		{"the catalogue's class when its fault did not fire", nil, CategoryNotRun, "NOT RUN: broker restart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, claims := chaosEvidence(tc.claims...)
			for _, r := range RenderProofBoundary(ev, claims) {
				if r.Category == tc.category && slices.Contains(r.Had, tc.want) {
					return
				}
			}
			t.Errorf("no %s entry reads\n  %s\ngot:\n%s", tc.category, tc.want, joined(renderedHad(ev, claims, tc.category)))
		})
	}
}

// firedAllBut claims that every nemesis kind but these fired once.
func firedAllBut(points ...string) []FaultClaim {
	var out []FaultClaim
	for _, k := range spec.NemesisKinds() {
		if p := spec.NemesisPrefix + k; !slices.Contains(points, p) {
			out = append(out, FaultClaim{Scenario: "chaos", Point: p, Fired: 1, Killed: []string{}})
		}
	}
	return out
}

func renderedHad(ev *Evidence, claims *ProofClaims, category string) []string {
	for _, r := range RenderProofBoundary(ev, claims) {
		if r.Category == category {
			return r.Had
		}
	}
	return nil
}

// TestProofFromClaimsNotConfig: what a scenario declares is not what ran.
// A fault that fired is under "had" and not under "not run"; one that did
// not fire is not under "had"; a class is covered only by a fault that
// fired (chaos declares every nemesis kind, seed 2 fired four).
func TestProofFromClaimsNotConfig(t *testing.T) {
	ev, claims := chaosEvidence(FaultClaim{Scenario: "chaos", Point: "nemesis-broker-restart", Fired: 1, Killed: []string{}},
		FaultClaim{Scenario: "chaos", Point: "nemesis-db-crash", Fired: 1, Killed: []string{}})
	rows := RenderProofBoundary(ev, claims)
	had, notRun := joined(rows[1].Had), joined(rows[3].Had)
	for _, p := range []string{"nemesis-broker-restart (in chaos)", "nemesis-db-crash (in chaos)"} {
		if !contains(had, p) {
			t.Errorf("had lacks %q:\n%s", p, had)
		}
	}
	for _, p := range []string{"nemesis-kill (in", "nemesis-pause (in"} {
		if contains(had, p) {
			t.Errorf("had lists %q, which did not fire:\n%s", p, had)
		}
	}
	for _, s := range []string{"NOT RUN: broker restart", "NOT RUN: database crash"} {
		if contains(notRun, s) {
			t.Errorf("not run lists %q, which ran:\n%s", s, notRun)
		}
	}
	if !contains(notRun, "NOT RUN: kill -9 of an actor") {
		t.Errorf("not run lacks kill -9 (no kill fired):\n%s", notRun)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
