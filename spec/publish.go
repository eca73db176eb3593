package spec

// Publish failures: the broker refuses a record, leaves a produce request
// unanswered, or appends a record and loses the acknowledgement. A relay
// marks SENT only what the broker acknowledged; the rest is retried after
// its lease, and a duplicate is absorbed by the inbox.
var publishScenarios = []Scenario{
	{
		ID: "publishFailures", Suite: SuiteEXT, Boundary: BoundarySend,
		Faults: []FaultRef{{PublishRefused, InjectBroker}, {PublishTimeout, InjectBroker}, {PublishAckLost, InjectBroker}},
		Description: "3 orders, one relay round each (a round publishes its batch in one go, and the broker fails whole requests): the broker refuses the first record, appends the second but loses its " +
			"acknowledgement, and leaves the third unanswered; nothing is marked; after the leases run out the same relay " +
			"takes its three rows over (v2) and publishes them again; the inbox absorbs the one duplicate",
		Metrics: []Metric{{"refused", "1"}, {"unknown", "2"}, {"marksAfterFailure", "0"}, {"retried", "3"},
			{"records", "4"}, {"effects", "3"}, {"duplicatesAbsorbed", "1"}, {"sent", "3"}},
		Needs: []Feature{FeatureClaimTokens},
	},
}
