package spec

// Layer is a layer of the verifier's rules. Which layers apply to a run
// follows from what its system under test claims (runner/sut.Features); the
// evidence records them and the verifier checks exactly those.
type Layer string

// The layers, from the most general to the most specific.
const (
	// LayerDelivery holds for any outbox pipeline: every committed intent
	// delivered at least once, exactly one effect per event, effects
	// guarded by the inbox, offsets and ordering.
	LayerDelivery Layer = "delivery"
	// LayerClaimToken holds for a relay that claims intents with a claim
	// version, a claim id and a lease, and marks them SENT with a
	// compare-and-set on that token.
	LayerClaimToken Layer = "claim-token"
	// LayerBusiness holds for this project's order service: orders, stock,
	// idempotency records and bearer tokens.
	LayerBusiness Layer = "business"
)

// Layers lists every layer in order.
var Layers = []Layer{LayerDelivery, LayerClaimToken, LayerBusiness}

// Unchecked says what is not proven when layer l does not apply.
func (l Layer) Unchecked() string {
	switch l {
	case LayerDelivery:
		return "delivery and effect rules: not checked"
	case LayerClaimToken:
		return "claim-token rules (claim versions, claim ids, leases, compare-and-set marks): not checked, " +
			"the system under test does not claim a claim-token protocol"
	case LayerBusiness:
		return "business rules (orders, stock, idempotency records, bearer tokens): not checked, " +
			"the system under test does not claim this project's order service"
	}
	return string(l) + " rules: not checked"
}
