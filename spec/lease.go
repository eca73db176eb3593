package spec

// Leases: a claim holds its row for a lease measured on the database
// clock, from the claim; a takeover, also by the relay that held the row,
// gets a lease of its own and a new claim_version that its old marks
// cannot match.
var leaseScenarios = []Scenario{
	{
		ID: "selfTakeover", Suite: SuiteEXT, Boundary: BoundarySend,
		Description: "relay A claims (v1) and publishes, stalls past its lease, and takes the row over itself: the same " +
			"claim_id with claim_version 2 and a fresh lease that relay B cannot claim through; A's mark with v1 hits 0 rows, " +
			"with v2 1 row",
		Metrics: []Metric{{"sameClaimId", "true"}, {"takeoverVersion", "2"}, {"stolen", "0"}, {"staleMark", "0"},
			{"deliveries", "2"}, {"effects", "1"}, {"state", "SENT"}},
		Needs: []Feature{FeatureStepwiseRelay, FeatureClaimTokens},
	},
	{
		ID: "batchSelfTakeover", Suite: SuiteEXT, Boundary: BoundarySend,
		Description: "2 orders; relay A claims both in one round and publishes both; between its publish and its batch " +
			"mark the first lease runs out (aged by SQL) and A takes that row over itself (v2, the same claim_id); A's one " +
			"compare-and-set over the batch, with v1 for both, must hit the second row only; A publishes the first again " +
			"under v2 and marks it",
		Metrics: []Metric{{"claims", "3"}, {"selfTakeovers", "1"}, {"staleMarks", "1"}, {"marks", "2"}, {"sent", "2"},
			{"effects", "2"}},
		Needs: []Feature{FeatureStepwiseRelay, FeatureClaimTokens},
	},
	{
		ID: "relayClockSkew", Suite: SuiteEXT, Boundary: BoundarySend,
		Description: "2 orders; a relay whose own clock is an hour ahead and one whose clock is an hour behind each claim " +
			"one; every lease ends the configured lease after its claim on the database clock, so that neither relay can " +
			"claim the other's row",
		Metrics: []Metric{{"claims", "2"}, {"leasesOffClock", "0"}, {"steals", "0"}, {"sent", "2"}, {"effects", "2"}},
		Needs:   []Feature{FeatureStepwiseRelay, FeatureClaimTokens},
	},
}
