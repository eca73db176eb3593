package spec

// Leases: a claim holds its row for a lease measured on the database
// clock, from the claim; a takeover, also by the relay that held the row,
// gets a lease of its own and a new claim_version that its old marks
// cannot match.
var leaseScenarios = []Scenario{
	{
		ID: "selfTakeover", Consumes: true, Suite: SuiteEXT, Boundary: BoundarySend,
		Description: "relay A claims (v1) and publishes, stalls past its lease, and takes the row over itself: the same " +
			"claim_id with claim_version 2 and a fresh lease that relay B cannot claim through; A's mark with v1 hits 0 rows, " +
			"with v2 1 row",
		Details: "1 order; A's lease is aged by SQL, as the clock would; A publishes again before its two marks, v1 (stale) then v2",
		Metrics: []Metric{
			{Name: "sameClaimId", Accept: "true", Means: "the first two claims of e have one claim_id"},
			{Name: "takeoverVersion", Accept: "2",
				Means: "claim_version of the first claim of e after the first by the same claim_id; 0 if none"},
			{Name: "stolen", Accept: "0", Means: "claims of e by another claim_id than the first claim's"},
			{Name: "staleMark", Accept: "0", Means: "rows of the last mark of e with claim_version 1"},
			{Name: "deliveries", Accept: "2", Means: "deliveries(e)"},
			{Name: "effects", Accept: "1", Means: "effects(e)"},
			{Name: "state", Accept: "SENT", Means: "final outbox state of e"},
		},
		Needs: []Feature{FeatureStepwiseRelay, FeatureClaimTokens},
	},
	{
		ID: "batchSelfTakeover", Consumes: true, Suite: SuiteEXT, Boundary: BoundarySend,
		Description: "2 orders; relay A claims both in one round and publishes both; between its publish and its batch " +
			"mark the first lease runs out (aged by SQL) and A takes that row over itself (v2, the same claim_id); A's one " +
			"compare-and-set over the batch, with v1 for both, must hit the second row only; A publishes the first again " +
			"under v2 and marks it",
		Details: "the round is `RunOnce`; the takeover happens at A's first pass of `after-publish-before-mark`, armed to " +
			"act, not to crash; a mark that checks less than the whole token, or that keeps what a partial " +
			"compare-and-set changed, reports the first row as marked",
		Metrics: []Metric{
			{Name: "claims", Accept: "3", Means: "claim events"},
			{Name: "selfTakeovers", Accept: "1", Means: "takeovers by the claim id that held the row"},
			{Name: "staleMarks", Accept: "1", Means: "tokens whose last mark hit no row"},
			{Name: "marks", Accept: "2", Means: "tokens whose last mark hit a row"},
			{Name: "sent", Accept: "2", Means: "SENT outbox rows"},
			{Name: "effects", Accept: "2", Means: "notification rows"},
		},
		Needs: []Feature{FeatureStepwiseRelay, FeatureClaimTokens},
	},
	{
		ID: "relayClockSkew", Consumes: true, Suite: SuiteEXT, Boundary: BoundarySend,
		Description: "2 orders; a relay whose own clock is an hour ahead and one whose clock is an hour behind each claim " +
			"one; every lease ends the configured lease after its claim on the database clock, so that neither relay can " +
			"claim the other's row",
		Details: "relay-ahead and relay-behind, leases of 30 s; the database clock is read before and after each claim; " +
			"then each tries to claim both rows while both are held; both publish and mark, and a consumer applies both",
		Metrics: []Metric{
			{Name: "claims", Accept: "2", Means: "claim events"},
			{Name: "leasesOffClock", Accept: "0",
				Means: "runner: claims whose lease_until minus the lease is outside [database NOW(6) before the claim, after " +
					"it]; verifier: claims breaking `lease-off-claim`, i.e. lease_until minus lease_ms more than 5 s from " +
					"the claim event's time"},
			{Name: "steals", Accept: "0",
				Means: "runner: rows claimed in the second attempt; verifier: takeovers by another claim_id than the row's holder"},
			{Name: "sent", Accept: "2", Means: "SENT outbox rows"},
			{Name: "effects", Accept: "2", Means: "notification rows"},
		},
		Needs: []Feature{FeatureStepwiseRelay, FeatureClaimTokens},
	},
}
