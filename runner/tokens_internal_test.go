package runner

import (
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// TestChaosBadTokensAreClaimCases: every bad token the chaos load sends is
// one of tokenClaims' cases, so that it is really changed.
func TestChaosBadTokensAreClaimCases(t *testing.T) {
	for _, name := range nemesis.BadTokens {
		found := false
		for _, c := range claimCases {
			found = found || c.metric == name
		}
		if !found {
			t.Errorf("nemesis.BadTokens names %q, which is no case of claimCases", name)
		}
	}
}
