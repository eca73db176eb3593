package spec

// The send boundary: a relay publishes outside any transaction and marks
// SENT with a compare-and-set on its claim token; a relay that dies in
// between is taken over after its lease.
var sendScenarios = []Scenario{
	{
		ID: "sendBeforeMarkCrash", Suite: SuiteU80, Boundary: BoundarySend,
		Faults:      []FaultRef{{AfterPublishBeforeMark, InjectHook}},
		Description: "relay A publishes and stops before marking; its lease expires; relay B re-claims (v2) and publishes again; A's stale mark hits 0 rows",
		Design: &Design{
			Injection: "publish succeeds, mark never happens, lease expires",
			Recovery:  "relay B claims v2, publishes the same event_id again; A's stale mark hits 0 rows",
			Accepted:  "2 deliveries, 1 effect, state SENT",
		},
		Metrics: []Metric{{"deliveries", "2"}, {"businessEffects", "1"}, {"oldTokenCas", "0"}, {"state", "SENT"}},
		Needs:   []Feature{FeatureStepwiseRelay, FeatureClaimTokens, FeatureFaultHooks},
	},
	{
		ID: "concurrentRelays", Suite: SuiteEXT, Boundary: BoundarySend,
		Description: "8 orders; relay B claims 4 inside relay A's claim of 4, after A's select locked its rows and before A " +
			"claims them, and both hold what they got, so that both hold live claims at once (the verifier finds the scenario " +
			"inconclusive when they did not); then one relay tries to claim all 8 while they are held and must get none; no " +
			"row may be held by both",
		Metrics: []Metric{{"claims", ""}, {"doubleClaims", "0"}, {"overlap", ""}, {"sent", "8"}, {"effects", "8"}},
		Needs:   []Feature{FeatureStepwiseRelay, FeatureClaimTokens},
	},
	{
		ID: "relayKill9", Suite: SuiteEXT, Boundary: BoundarySend,
		Faults:      []FaultRef{{AfterPublishBeforeMark, InjectSignal}},
		Description: "relay A runs as its own OS process and is killed by SIGKILL after publishing, before marking; its short lease runs out on the database clock; relay B takes over",
		Metrics: []Metric{{"killed", "true"}, {"takeoverVersion", "2"}, {"deliveries", "2"}, {"businessEffects", "1"},
			{"state", "SENT"}},
		Needs: []Feature{FeatureProcesses, FeatureClaimTokens, FeatureFaultHooks},
	},
}
