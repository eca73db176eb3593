package blackbox_test

import (
	"path/filepath"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
)

// TestPlantedBundles runs the layer over the committed planted bundles
// (checks/testdata/planted, one planted bug each): a plant of the
// delivery, effect or commit layer must FAIL the matching rule and no
// other; a plant the witnesses cannot show (claim-token internals, or a
// bug whose run lost nothing) must not FAIL. A scenario that runs no
// relay (no topic) is checked for commit-atomic alone: its events were
// never meant to be published.
func TestPlantedBundles(t *testing.T) {
	p := referenceProfile(t)
	for _, tc := range []struct {
		plant string
		fail  []string // the rules that must FAIL; none: no rule may
	}{
		// The reference profile's invariants (invariants/sql's anti-joins)
		// see the same: a notification without its inbox row, a SENT
		// event without its notification.
		{"no-inbox-dedupe", []string{blackbox.RuleEffects, blackbox.RuleEffectOutsideInbox, blackbox.RuleInvariants}},
		{"offset-before-effect", []string{blackbox.RuleEffects, blackbox.RuleInvariants}},
		{"outbox-outside-tx", []string{blackbox.RuleCommitAtomic}},
		// created-on-rollback answers 201 for an order that rolled back:
		// the answer rule's to find, from the client's history, which
		// these bundles do not hold. (Its scenario, txBoundaryRollback,
		// seeds an outbox row of its own to make the order collide, so
		// commit-atomic fails there with or without the plant: a setup
		// write the reference profile cannot tell from the pipeline's.)
		{"created-on-rollback", []string{blackbox.RuleCommitAtomic}},
		// Beyond the layer's reach (docs/blackbox.md, "What each plant
		// shows"): the claim token's internals, and a mark before the
		// publish that lost nothing in this run.
		{"claim-without-lock", nil},
		{"mark-without-token", nil},
		{"mark-before-publish", nil},
		// Business rules of our order service: not the layer's.
		{"amount-ignores-quantity", nil},
		{"idem-key-across-users", nil},
		{"token-alg-none", nil},
		{"proof-from-config", nil},
	} {
		t.Run(tc.plant, func(t *testing.T) {
			b := readBundle(t, filepath.Join("..", "testdata", "planted", tc.plant, "u80.json"))
			if len(b.scenarios) != 1 {
				t.Fatalf("%d scenarios; want 1", len(b.scenarios))
			}
			s := b.scenarios[0]
			relay := len(s.Topics) > 0
			if !relay {
				s.Topics = []string{"none"}
			}
			res := checkScenario(t, p, b, s)
			want := map[string]bool{}
			for _, r := range tc.fail {
				want[r] = true
			}
			for _, rr := range res.Rules {
				if !relay && rr.ID != blackbox.RuleCommitAtomic {
					continue
				}
				if got := rr.Status == blackbox.Fail; got != want[rr.ID] {
					t.Errorf("rule %s: %s (%d reasons); want FAIL=%v", rr.ID, rr.Status, rr.Count, want[rr.ID])
				}
			}
			if t.Failed() {
				for _, r := range res.Reasons {
					t.Logf("%s", r)
				}
			}
		})
	}
}
