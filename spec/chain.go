package spec

// The chain without faults: order, claim, publish, mark, consume, and the
// business invariants over its end state.
var chainScenarios = []Scenario{
	{
		ID: "normalChain", Suite: SuiteU80, Boundary: BoundaryNone,
		Description: "order -> claim -> publish -> mark -> consume, each outbox state observed by a query; a redelivery is blocked by the inbox key",
		Metrics: []Metric{{"outboxTx", "PENDING→CLAIMED→SENT"}, {"deliveries", "1"}, {"effects", "1"},
			{"duplicateBlocked", "unique"}},
		Needs: []Feature{FeatureStepwiseRelay, FeatureClaimTokens},
	},
	{
		ID: "businessInvariants", Suite: SuiteU80, Boundary: BoundaryNone,
		Description: "three orders through the whole chain, then the anti-join invariants run live as SQL",
		Metrics: []Metric{{"sent", "3"}, {"effects", "3"}, {"inbox", "3"}, {"linkedOrders", "3"}, {"orphanSent", "0"},
			{"sentWithoutEffect", "0"}, {"effectWithoutInbox", "0"}, {"duplicatedEffects", "0"}, {"orphanEffects", "0"}},
	},
}
