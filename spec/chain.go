package spec

// The chain without faults: order, claim, publish, mark, consume, and the
// business invariants over its end state.
var chainScenarios = []Scenario{
	{
		ID: "normalChain", Consumes: true, Suite: SuiteU80, Boundary: BoundaryNone,
		Description: "order -> claim -> publish -> mark -> consume, each outbox state observed by a query; a redelivery is blocked by the inbox key",
		Metrics: []Metric{
			{Name: "outboxTx", Accept: "PENDING→CLAIMED→SENT",
				Means: "the states of the order's intent observed by `observe` events, consecutive repeats collapsed, joined by `→`"},
			{Name: "deliveries", Accept: "1", Means: "deliveries(e)"},
			{Name: "effects", Accept: "1", Means: "effects(e)"},
			{Name: "duplicateBlocked", Accept: "unique", Means: "`unique` when an `inbox_reject` for e exists, else `none`"},
		},
		Needs: []Feature{FeatureStepwiseRelay, FeatureClaimTokens},
	},
	{
		ID: "businessInvariants", Consumes: true, Suite: SuiteU80, Boundary: BoundaryNone,
		Description: "three orders through the whole chain, then the anti-join invariants run live as SQL",
		Metrics: []Metric{
			{Name: "sent", Accept: "3", Means: "SENT outbox rows"},
			{Name: "effects", Accept: "3", Means: "notification rows"},
			{Name: "inbox", Accept: "3", Means: "inbox rows"},
			{Name: "linkedOrders", Accept: "3", Means: "SENT rows whose aggregate_id is an order"},
			{Name: "orphanSent", Accept: "0", Means: "rows of the invariant `orphan-sent`"},
			{Name: "sentWithoutEffect", Accept: "0", Means: "rows of the invariant `sent-without-effect`"},
			{Name: "effectWithoutInbox", Accept: "0", Means: "rows of the invariant `effect-without-inbox`"},
			{Name: "duplicatedEffects", Accept: "0", Means: "rows of the invariant `duplicated-effects`"},
			{Name: "orphanEffects", Accept: "0", Means: "rows of the invariant `orphan-effects`"},
		},
	},
}
