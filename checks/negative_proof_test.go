package checks

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// TestProofBoundaryNegativeControls: the proof boundary is derived by the
// verifier itself from the events and the witnesses, not recomputed from
// what the evidence says it was configured to do. Evidence whose claims
// (and the matrix rendered from them, as a forger would) say a fault fired
// that never did, omit one that did, or list as NOT RUN one that ran, and
// evidence whose matrix was edited by hand with every digest resealed, each
// FAIL with proof-mismatch naming the item. The fixture is a clean run of
// every scenario: orderCrashWindow's fault cannot fire in it, and
// publishFailures' publish-ack-lost fired once.
func TestProofBoundaryNegativeControls(t *testing.T) {
	const (
		neverFired = "after-order-commit-before-outbox in orderCrashWindow"
		fired      = "publish-ack-lost in publishFailures"
	)
	claim := func(ev *evidence.Evidence, scenario, point string) *evidence.FaultClaim {
		i := slices.IndexFunc(ev.ProofClaims.Faults, func(f evidence.FaultClaim) bool { return f.Scenario == scenario && f.Point == point })
		if i < 0 {
			t.Fatalf("the fixture claims nothing of %s in %s", point, scenario)
		}
		return &ev.ProofClaims.Faults[i]
	}
	for _, tc := range []struct {
		name  string
		edit  func(ev *evidence.Evidence)
		field string // the reason's field: the item it names
		says  string // in its message
	}{
		{"claims a fault that never fired", func(ev *evidence.Evidence) {
			claim(ev, "orderCrashWindow", "after-order-commit-before-outbox").Fired = 1
			ev.ProofBoundary = evidence.RenderProofBoundary(ev, ev.ProofClaims)
		}, "proof_claims[" + neverFired + "]", "but it never fired"},
		{"omits a fault that fired", func(ev *evidence.Evidence) {
			ev.ProofClaims.Faults = slices.DeleteFunc(ev.ProofClaims.Faults, func(f evidence.FaultClaim) bool {
				return f.Scenario == "publishFailures" && f.Point == "publish-ack-lost"
			})
			ev.ProofBoundary = evidence.RenderProofBoundary(ev, ev.ProofClaims)
		}, "proof_claims[" + fired + "]", "omits " + fired},
		{"lists as not run a fault that ran", func(ev *evidence.Evidence) {
			claim(ev, "publishFailures", "publish-ack-lost").Fired = 0
			ev.ProofBoundary = evidence.RenderProofBoundary(ev, ev.ProofClaims)
			if !slices.Contains(ev.ProofBoundary[3].Had, "NOT RUN: producer unknown outcome (the publish times out after the broker appended the record)") {
				t.Fatalf("the forged matrix does not list the producer's unknown outcome as not run: %q", ev.ProofBoundary[3].Had)
			}
		}, "proof_claims[" + fired + "]", "lists " + fired + " as not run, but it fired 1 time(s)"},
		{"claims a kill that the process record does not show", func(ev *evidence.Evidence) {
			claim(ev, "sendBeforeMarkCrash", "after-publish-before-mark").Killed = []string{"relay"}
			ev.ProofBoundary = evidence.RenderProofBoundary(ev, ev.ProofClaims)
		}, "proof_claims[after-publish-before-mark in sendBeforeMarkCrash]", "killed relay, the process record shows no actor"},
		{"claims a scenario's fault the scenario does not declare", func(ev *evidence.Evidence) {
			ev.ProofClaims.Faults = append(ev.ProofClaims.Faults, evidence.FaultClaim{Scenario: "normalChain",
				Point: "nemesis-broker-restart", Fired: 1, Killed: []string{}})
			ev.ProofBoundary = evidence.RenderProofBoundary(ev, ev.ProofClaims)
		}, "proof_claims[nemesis-broker-restart in normalChain]", "not a declared fault of a scenario that ran"},
		{"matrix edited by hand: a NOT RUN entry of a fault that ran", func(ev *evidence.Evidence) {
			nr := &ev.ProofBoundary[3]
			nr.Had = append(nr.Had, "NOT RUN: producer unknown outcome (the publish times out after the broker appended the record)")
			nr.CannotInfer = append(nr.CannotInfer, "producer unknown outcome: edited by hand")
		}, "proof_boundary[not run].had[", "not what this verifier derives from the events and the witnesses"},
		{"matrix edited by hand: a kill -9 that did not happen", func(ev *evidence.Evidence) {
			nr := &ev.ProofBoundary[3]
			i := slices.IndexFunc(nr.Had, func(s string) bool { return strings.HasPrefix(s, "NOT RUN: kill -9") })
			if i < 0 {
				t.Fatalf("the fixture's matrix has no kill -9 entry: %q", nr.Had)
			}
			nr.Had = slices.Delete(nr.Had, i, i+1)
			nr.CannotInfer = slices.Delete(nr.CannotInfer, i, i+1)
		}, "proof_boundary[not run].had[", "not what this verifier derives"},
		{"no claims (evidence of an older version)", func(ev *evidence.Evidence) {
			ev.ProofClaims = nil
		}, "", "records no proof claims"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := copyFixture(t, "witnessed")
			ev := readEvidence(t, p)
			tc.edit(ev)
			writeEvidence(t, p, ev)
			reseal(t, p) // a forger fixes every digest up; the evidence file has none of its own
			v := verify(t, p)
			rs := reasonsOf(v, "proof-mismatch")
			if v.Status != Fail || len(rs) == 0 {
				t.Fatalf("verdict %s %v; want FAIL with proof-mismatch", v.Status, rules(v))
			}
			for _, r := range rs {
				if strings.HasPrefix(r.Field, tc.field) && strings.Contains(r.Message, tc.says) {
					if r.Status != Fail {
						t.Errorf("reason %+v is not a failure", r)
					}
					return
				}
			}
			t.Errorf("no proof-mismatch names %q and says %q: %+v", tc.field, tc.says, rs)
		})
	}
}

// TestProofBoundaryCleanFixtures: the committed clean fixtures' claims and
// matrices are what the verifier derives (no proof-mismatch), so the
// controls above fail for their edit alone.
func TestProofBoundaryCleanFixtures(t *testing.T) {
	for _, name := range []string{"witnessed", "u80"} {
		t.Run(name, func(t *testing.T) {
			v := verify(t, copyFixture(t, name))
			if rs := reasonsOf(v, "proof-mismatch"); len(rs) > 0 {
				t.Fatalf("clean fixture: %+v", rs)
			}
			if v.Audited == "" || !strings.HasPrefix(v.Audited, "the orderflow-audit reference pipeline, suite") {
				t.Errorf("verdict.audited = %q; want the system under test, the suites and the run", v.Audited)
			}
		})
	}
}

// TestVerifyTextSaysWhatWasAudited: verify's first line names the system
// under test, the suites and the run; the text says what the witnesses
// confirmed; past ten reasons it leads with a count per rule.
func TestVerifyTextSaysWhatWasAudited(t *testing.T) {
	p := copyFixture(t, "witnessed")
	v := verify(t, p)
	var b bytes.Buffer
	if err := WriteText(&b, v); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(b.String(), "\n")
	if want := "orderflow-audit verify: PASS for the orderflow-audit reference pipeline, suites U79, U80 and EXT, run " + v.RunID; first != want {
		t.Errorf("first line %q; want %q", first, want)
	}
	if !strings.Contains(b.String(), "\nthe witnesses confirmed (30 scenario(s)):\n  placement: commit boundary:") {
		t.Errorf("the text does not say what the witnesses confirmed:\n%s", b.String())
	}
	if strings.Contains(b.String(), "reasons, by rule") {
		t.Errorf("a passing verdict leads with counts per rule:\n%s", b.String())
	}

	v.Reasons = nil
	for i := range 12 {
		rule, st := "log-digest", Fail
		if i%3 == 0 {
			rule, st = "scenario-not-run", Inconclusive
		}
		v.Reasons = append(v.Reasons, Reason{Rule: rule, Status: st, Message: "m"})
	}
	b.Reset()
	if err := WriteText(&b, v); err != nil {
		t.Fatal(err)
	}
	want := "\n12 reasons, by rule:\n      8  log-digest                       failed\n      4  scenario-not-run                 inconclusive\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("twelve reasons: the text lacks\n%s\ngot:\n%s", want, b.String())
	}
	if i, j := strings.Index(b.String(), "reasons, by rule"), strings.Index(b.String(), "failed (8)"); i < 0 || j < i {
		t.Errorf("the counts do not lead the reasons:\n%s", b.String())
	}
}
