package spec

// The consumer beyond the ack boundary: several events per order over
// several partitions, database errors inside the effect transaction, and
// a restart after clean commits.
var consumerScenarios = []Scenario{
	{
		ID: "orderLifecycle", Suite: SuiteEXT, Boundary: BoundaryNone,
		Description: "4 orders each go created → paid → shipped (aggregate_version 1, 2, 3; each later intent written in " +
			"the transaction that updates the order row) on a topic of 3 partitions keyed by order id; one relay round, " +
			"one consumer: each order's records share a partition and its effects follow its versions",
		Metrics: []Metric{{"orders", "4"}, {"intents", "12"}, {"partitions", ""}, {"splitOrders", "0"},
			{"outOfOrder", "0"}, {"effects", "12"}},
	},
	{
		ID: "effectDbError", Suite: SuiteEXT, Boundary: BoundaryAck,
		Faults: []FaultRef{{EffectCommitKilled, InjectSQL}, {EffectInsertError, InjectSQL}},
		Description: "3 orders, one consumer: its connection is killed by KILL CONNECTION before the COMMIT of e-1's effect " +
			"transaction (commit_unknown), and a trigger refuses e-2's effect insert after its inbox insert " +
			"(effect_rolled_back); each transaction is gone as a whole, the offset stays before the record, the replay " +
			"makes its one effect",
		Metrics: []Metric{{"rolledBack", "1"}, {"commitUnknown", "1"}, {"committedAtFailure", "1"}, {"replays", "2"},
			{"effects", "3"}, {"lag", "0"}},
		Needs: []Feature{FeatureFaultHooks},
	},
	{
		ID: "replayCrash", Suite: SuiteEXT, Boundary: BoundaryAck,
		Faults: []FaultRef{{EffectInsertError, InjectSQL}, {AfterEffectBeforeOffsetCommit, InjectHook}},
		Description: "2 orders in one batch: a trigger refuses e-1's effect insert, the consumer rolls back and rewinds; " +
			"replaying both, it stops after e-1's effect and before that offset commit; consumer-2 of the group resumes at " +
			"e-1 (a duplicate for its inbox) and applies e-2: nothing the crashed member polled was committed for it",
		Metrics: []Metric{{"rolledBack", "1"}, {"committedAtFailure", "0"}, {"resumedAt", "0"}, {"effects", "2"},
			{"lag", "0"}},
		Needs: []Feature{FeatureFaultHooks},
	},
	{
		ID: "consumerRestart", Suite: SuiteEXT, Boundary: BoundaryAck,
		Description: "2 orders, the second published twice (a duplicate record); consumer-1 applies both, its inbox rejects " +
			"the duplicate, it commits every offset and stops; a third order is published; consumer-2 of the same group " +
			"resumes exactly at the next record and the group ends with no lag",
		Metrics: []Metric{{"duplicates", "1"}, {"committed", "3"}, {"resumedAt", "3"}, {"replays", "0"},
			{"effects", "3"}, {"lag", "0"}},
		Needs: []Feature{FeatureStepwiseRelay},
	},
}
