package spec

// Publish failures: the broker refuses a record, leaves a produce request
// unanswered, or appends a record and loses the acknowledgement. A relay
// marks SENT only what the broker acknowledged; the rest is retried after
// its lease, and a duplicate is absorbed by the inbox.
var publishScenarios = []Scenario{
	{
		ID: "publishFailures", Consumes: true, Suite: SuiteEXT, Boundary: BoundarySend,
		Faults: []FaultRef{{PublishRefused, InjectBroker}, {PublishTimeout, InjectBroker}, {PublishAckLost, InjectBroker}},
		Description: "3 orders, one relay round each (a round publishes its batch in one go, and the broker fails whole requests): the broker refuses the first record, appends the second but loses its " +
			"acknowledgement, and leaves the third unanswered; nothing is marked; after the leases run out the same relay " +
			"takes its three rows over (v2) and publishes them again; the inbox absorbs the one duplicate",
		Details: "one relay with a 300 ms publish timeout and a batch of 1: the broker answers INVALID_RECORD to e-1 and " +
			"appends nothing, appends e-2 and answers REQUEST_TIMED_OUT to it and its retries, leaves e-3's request " +
			"unanswered; the leases are aged by SQL; a fresh consumer applies everything the topic holds. Needs the " +
			"embedded broker (NOT_RUN on an external cluster)",
		Metrics: []Metric{
			{Name: "refused", Accept: "1", Means: "`publish` events with `err`"},
			{Name: "unknown", Accept: "2", Means: "`publish_unknown` events"},
			{Name: "marksAfterFailure", Accept: "0",
				Means: "marks that hit a row after their claim's last publish was refused or unknown"},
			{Name: "retried", Accept: "3", Means: "takeovers by the claim_id that held the row"},
			{Name: "records", Accept: "4", Means: "runner: the topic's end offset; verifier: distinct records received"},
			{Name: "effects", Accept: "3", Means: "notification rows"},
			{Name: "duplicatesAbsorbed", Accept: "1", Means: "`inbox_reject` events"},
			{Name: "sent", Accept: "3", Means: "SENT outbox rows"},
		},
		Needs: []Feature{FeatureClaimTokens},
	},
}
