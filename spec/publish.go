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
	{
		ID: "versionsAfterRefusal", Consumes: true, Suite: SuiteEXT, Boundary: BoundarySend,
		Faults: []FaultRef{{PublishRefused, InjectBroker}},
		Description: "1 order advanced to versions 2 and 3 before any relay runs (three intents of one aggregate); the broker " +
			"refuses version 1's first publish, which stays CLAIMED until its lease runs out: a relay must not publish a later " +
			"version of the order meanwhile; once the lease is aged the relay publishes versions 1, 2 and 3 in that order and " +
			"the consumer applies them so",
		Details: "one relay with a batch of 1 runs rounds until one claims nothing, before and after the lease of the refused " +
			"intent is aged by SQL; a fresh consumer applies everything the topic holds. A relay that claims the first " +
			"PENDING intent whatever its aggregate's earlier versions (the planted `publish-ahead-of-version`) publishes " +
			"versions 2 and 3 while version 1 waits. Needs the embedded broker (NOT_RUN on an external cluster)",
		Metrics: []Metric{
			{Name: "refused", Accept: "1", Means: "`publish` events with `err`"},
			{Name: "aheadOfVersion", Accept: "0",
				Means: "first records of an event that come after a record of a higher version of the same order (runner: " +
					"the broker's log in offset order; verifier: the group's first receives)"},
			{Name: "records", Accept: "3", Means: "runner: the topic's end offset; verifier: distinct records received"},
			{Name: "outOfOrder", Accept: "0", Means: "notifications of an order committed after one of a higher version"},
			{Name: "effects", Accept: "3", Means: "notification rows"},
			{Name: "sent", Accept: "3", Means: "SENT outbox rows"},
		},
		Needs: []Feature{FeatureClaimTokens},
	},
	{
		ID: "publishBatchTimeout", Consumes: true, Suite: SuiteEXT, Boundary: BoundarySend,
		Faults: []FaultRef{{PublishTimeout, InjectBroker}},
		Description: "6 orders claimed in one relay round (a batch of 6) while the broker leaves every produce request " +
			"unanswered: the round's publish of the whole batch ends, unknown, within one publish timeout of its claim, not " +
			"one per record; after the leases run out the relay publishes the six again and the consumer applies them",
		Details: "one relay with a 300 ms publish timeout and a batch of 6; the broker swallows the requests of all six " +
			"records (appends nothing, answers nothing); the leases are aged by SQL and the relay runs rounds until one " +
			"claims nothing; a fresh consumer applies everything the topic holds. A relay whose timeout grows with the batch " +
			"(a timeout per record summed, or one scaled by the batch's length) ends the round 1.8 s after its claim, past " +
			"the bound (spec.PublishRoundSlack). Needs the embedded broker (NOT_RUN on an external cluster)",
		Metrics: []Metric{
			{Name: "claims", Accept: "12", Means: "`claim` events: the first round's six and their six takeovers"},
			{Name: "unknown", Accept: "6", Means: "`publish_unknown` events"},
			{Name: "pastTimeout", Accept: "0",
				Means: "runner: the first round's claims when the round took longer than its publish timeout plus spec.PublishRoundSlack; " +
					"verifier: claims whose first publish outcome came past that bound after the claim (`publish-past-timeout`)"},
			{Name: "effects", Accept: "6", Means: "notification rows"},
			{Name: "sent", Accept: "6", Means: "SENT outbox rows"},
		},
		Needs: []Feature{FeatureClaimTokens},
	},
	{
		ID: "relayPoll", Consumes: true, Suite: SuiteEXT, Boundary: BoundarySend,
		Description: "a relay polls in a loop with its own default poll while 4 orders are placed one at a time, each " +
			"once the one before is SENT and the relay has gone idle: each committed intent is claimed within the poll " +
			"spec promises (RelayPoll) plus ClaimWaitSlack of its insert, as the binlog stamps both; a consumer applies them",
		Details: "one relay runs Run with poll 0 (the relay's default, relay.DefaultPoll) and a batch of 1; the scenario " +
			"waits for each order's intent to be SENT and 50 ms more before it places the next one; the first intent is " +
			"not judged (the relay had not claimed before it: not known to be alive), the other three are " +
			"(witness-claim-wait). A relay polling every 600 ms or slower breaks the bound. Then the relay is stopped and a " +
			"fresh consumer applies the topic",
		Metrics: []Metric{
			{Name: "claims", Accept: "4", Means: "runner: outbox rows claimed (claim_version above 0); verifier: `claim` events"},
			{Name: "sent", Accept: "4", Means: "SENT outbox rows"},
			{Name: "effects", Accept: "4", Means: "notification rows"},
		},
		Needs: []Feature{FeatureClaimTokens},
	},
}
