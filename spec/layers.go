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
