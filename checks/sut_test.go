package checks

import (
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// TestSystemUnderTest: what the evidence says of the system under test
// cannot be edited to escape a layer of rules.
func TestSystemUnderTest(t *testing.T) {
	all := []string{"claim-tokens", "stepwise-relay", "fault-hooks", "actor-processes", "order-service"}
	for _, tc := range []struct {
		name     string
		sut      *evidence.SUTEnv
		mismatch int // sut-mismatch reasons
	}{
		{"reference, every feature", &evidence.SUTEnv{Name: spec.ReferenceSUT, Features: all,
			Layers: []string{"delivery", "claim-token", "business"}}, 0},
		{"reference without claim tokens", &evidence.SUTEnv{Name: spec.ReferenceSUT,
			Features: []string{"stepwise-relay", "fault-hooks", "actor-processes", "order-service"},
			Layers:   []string{"delivery", "business"}}, 2}, // the features, and the layers they would give
		{"layers that do not follow", &evidence.SUTEnv{Name: "other", Features: all, Layers: []string{"delivery"}}, 1},
		// The committed scenarios that need claim tokens, a stepwise
		// relay, fault hooks or actor processes ran although the system
		// under test does not claim them.
		{"scenarios that need what is not claimed", &evidence.SUTEnv{Name: "other", Features: []string{"order-service"},
			Layers: []string{"delivery", "business"}}, needingMoreThan(spec.FeatureOrderService)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := copyCommitted(t)
			ev := readEvidence(t, path)
			ev.Environment.SUT = tc.sut
			rederive(t, path, ev)
			v := verify(t, path)
			if got := len(reasonsOf(v, "sut-mismatch")); got != tc.mismatch {
				t.Fatalf("%d sut-mismatch reasons; want %d: %+v", got, tc.mismatch, reasonsOf(v, "sut-mismatch"))
			}
			if tc.mismatch > 0 && v.Status != Fail {
				t.Errorf("verdict %s; want FAIL", v.Status)
			}
		})
	}
}

// needingMoreThan counts the scenarios of the spec (every one is in the
// committed evidence) that need a feature besides have.
func needingMoreThan(have ...spec.Feature) int {
	n := 0
	for _, s := range spec.All() {
		if !s.OptIn && len(spec.Features(have).Missing(s.Needs)) > 0 { // the committed run is the default selection
			n++
		}
	}
	return n
}
