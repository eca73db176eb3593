package spec

// The send boundary: a relay publishes outside any transaction and marks
// SENT with a compare-and-set on its claim token; a relay that dies in
// between is taken over after its lease.
var sendScenarios = []Scenario{
	{
		ID: "sendBeforeMarkCrash", Consumes: true, Suite: SuiteU80, Boundary: BoundarySend,
		Faults:      []FaultRef{{AfterPublishBeforeMark, InjectHook}},
		Description: "relay A publishes and stops before marking; its lease expires; relay B re-claims (v2) and publishes again; A's stale mark hits 0 rows",
		Design: &Design{
			Injection: "publish succeeds, mark never happens, lease expires",
			Recovery:  "relay B claims v2, publishes the same event_id again; A's stale mark hits 0 rows",
			Accepted:  "2 deliveries, 1 effect, state SENT",
		},
		Metrics: []Metric{
			{Name: "deliveries", Accept: "2", Means: "deliveries(e)"},
			{Name: "businessEffects", Accept: "1", Means: "effects(e)"},
			{Name: "oldTokenCas", Accept: "0", Means: "rows of the last `mark` of e with claim_version 1 (relay A's stale token)"},
			{Name: "state", Accept: "SENT", Means: "final outbox state of e"},
		},
		Needs: []Feature{FeatureStepwiseRelay, FeatureClaimTokens, FeatureFaultHooks},
	},
	{
		ID: "concurrentRelays", Consumes: true, Suite: SuiteEXT, Boundary: BoundarySend,
		Description: "8 orders; relay B claims 4 inside relay A's claim of 4, after A's select locked its rows and before A " +
			"claims them, and both hold what they got, so that both hold live claims at once (the verifier finds the scenario " +
			"inconclusive when they did not); then one relay tries to claim all 8 while they are held and must get none; no " +
			"row may be held by both",
		Details: "relay B's claim runs at the interleaving point `claim-locked` (after A's select returned, and locked, " +
			"its rows, before A claims them); both hold what they got (live 30 s leases); then relay B tries to claim " +
			"all 8; both publish and mark what they hold; relay A sweeps what is left",
		Metrics: []Metric{
			{Name: "claims", Example: "8", Means: "claim events"},
			{Name: "doubleClaims", Accept: "0",
				Means: "claims of a row while another actor's lease on it was live and not expired"},
			{Name: "overlap", Example: "true",
				Means: "`true` when a claim was made while another claim id held a live claim: its latest claim still " +
					"the row's token, the row CLAIMED, the lease not over at that claim's time"},
			{Name: "sent", Accept: "8", Means: "SENT outbox rows"},
			{Name: "effects", Accept: "8", Means: "notification rows"},
		},
		Also: "`overlap=false` makes the verifier's verdict on a PASS inconclusive (`scenario-not-exercised`): the " +
			"relays never held claims at once, so SKIP LOCKED and the lease check were not shown",
		Needs: []Feature{FeatureStepwiseRelay, FeatureClaimTokens},
	},
	{
		ID: "relayKill9", Consumes: true, Suite: SuiteEXT, Boundary: BoundarySend,
		Faults:      []FaultRef{{AfterPublishBeforeMark, InjectSignal}},
		Description: "relay A runs as its own OS process and is killed by SIGKILL after publishing, before marking; its short lease runs out on the database clock; relay B takes over",
		Details: "relay A is `orderflow-audit actor relay` with a 400 ms lease, which runs out on the database clock " +
			"(not aged by SQL)",
		Metrics: []Metric{
			{Name: "killed", Accept: "true",
				Means: "a `fault` event at after-publish-before-mark exists, recorded by the scenario after the process " +
					"ended by SIGKILL"},
			{Name: "takeoverVersion", Accept: "2", Means: "claim_version of the first claim of e by another claim id; 0 if none"},
			{Name: "deliveries", Accept: "2", Means: "deliveries(e)"},
			{Name: "businessEffects", Accept: "1", Means: "effects(e)"},
			{Name: "state", Accept: "SENT", Means: "final outbox state of e"},
		},
		Needs: []Feature{FeatureProcesses, FeatureClaimTokens, FeatureFaultHooks},
	},
}
