package spec

import "slices"

// Feature is something a system under test claims to do (runner/sut). A
// scenario that needs a feature the system under test lacks does not run;
// the layers of verifier rules that apply follow from the features.
type Feature string

// The features.
const (
	// FeatureClaimTokens: the relay claims intents with a claim version,
	// a claim id and a lease, and marks them SENT with a compare-and-set
	// on that token (the claim-token layer of rules).
	FeatureClaimTokens Feature = "claim-tokens"
	// FeatureStepwiseRelay: the relay's claim, publish and mark can be
	// driven one at a time, so that a scenario can act between them.
	FeatureStepwiseRelay Feature = "stepwise-relay"
	// FeatureFaultHooks: the actors stop at the named fault points of the
	// fault table when a scenario arms them.
	FeatureFaultHooks Feature = "fault-hooks"
	// FeatureProcesses: the actors can run as OS processes of this binary
	// (the actor command), so that a scenario can kill one.
	FeatureProcesses Feature = "actor-processes"
	// FeatureOrderService: the order service is this project's (orders,
	// stock, idempotency records, bearer tokens: the business layer).
	FeatureOrderService Feature = "order-service"
)

// AllFeatures lists every feature in order.
var AllFeatures = []Feature{FeatureClaimTokens, FeatureStepwiseRelay, FeatureFaultHooks, FeatureProcesses, FeatureOrderService}

// Features is a set of features.
type Features []Feature

// Has tells whether f is claimed.
func (fs Features) Has(f Feature) bool { return slices.Contains(fs, f) }

// Missing returns the features of need that fs lacks.
func (fs Features) Missing(need []Feature) []Feature {
	var out []Feature
	for _, f := range need {
		if !fs.Has(f) {
			out = append(out, f)
		}
	}
	return out
}

// Layers returns the layers of verifier rules that apply: delivery always,
// claim-token and business when their feature is claimed.
func (fs Features) Layers() []Layer {
	out := []Layer{LayerDelivery}
	if fs.Has(FeatureClaimTokens) {
		out = append(out, LayerClaimToken)
	}
	if fs.Has(FeatureOrderService) {
		out = append(out, LayerBusiness)
	}
	return out
}

// ReferenceSources are the directories (relative to the module root) of
// the reference implementation's source, whose digest the evidence
// records: the migrations that make its tables, the consumer, the order
// service, the planted bugs, the relay and the seam that builds them.
var ReferenceSources = []string{"migrations", "runner/internal/consumer", "runner/internal/orders", "runner/internal/plant",
	"runner/internal/relay", "runner/sut"}

// ReferenceSUT names this project's implementation of the system under
// test in the evidence; it claims every feature. The verifier holds
// evidence that names it to every layer, whatever else it says.
const ReferenceSUT = "orderflow-audit reference"
