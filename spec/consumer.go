package spec

// The consumer beyond the ack boundary: several events per order over
// several partitions, database errors inside the effect transaction, and
// a restart after clean commits.
var consumerScenarios = []Scenario{
	{
		ID: "orderLifecycle", Consumes: true, Suite: SuiteEXT, Boundary: BoundaryNone,
		Description: "4 orders each go created → paid → shipped (aggregate_version 1, 2, 3; each later intent written in " +
			"the transaction that updates the order row) on a topic of 3 partitions keyed by order id; one relay round, " +
			"one consumer: each order's records share a partition and its effects follow its versions",
		Details: "each change is a transaction of its own that updates the order row and writes the intent of the change " +
			"(`order_advanced`: aggregate_version 2 and 3, event id `e-<id>-v<version>`), so 12 intents; kgo's key hash " +
			"puts orders 1..4 on partitions 0, 2, 2, 1; the relay round publishes them in id order; the consumer applies everything",
		Metrics: []Metric{
			{Name: "orders", Accept: "4", Means: "runner: order rows; verifier: `order_committed` events"},
			{Name: "intents", Accept: "12", Means: "outbox rows"},
			{Name: "partitions", Example: "3",
				Means: "runner: distinct partitions of the records the broker holds; verifier: distinct partitions of the " +
					"records published or received"},
			{Name: "splitOrders", Accept: "0",
				Means: "orders whose records are on more than one partition: runner by record key, verifier by the records' intents"},
			{Name: "outOfOrder", Accept: "0",
				Means: "notifications of an order committed after a notification of a higher aggregate_version of that " +
					"order: runner by notification id, verifier by `effect` order"},
			{Name: "effects", Accept: "12", Means: "notification rows"},
		},
		Also: "`partitions` below 2 makes the verifier's verdict on a PASS inconclusive (`scenario-not-exercised`): no order " +
			"between partitions was at stake",
	},
	{
		ID: "effectDbError", Consumes: true, Suite: SuiteEXT, Boundary: BoundaryAck,
		Faults: []FaultRef{{EffectCommitKilled, InjectSQL}, {EffectInsertError, InjectSQL}},
		Description: "3 orders, one consumer: its connection is killed by KILL CONNECTION before the COMMIT of e-1's effect " +
			"transaction (commit_unknown), and a trigger refuses e-2's effect insert after its inbox insert " +
			"(effect_rolled_back); each transaction is gone as a whole, the offset stays before the record, the replay " +
			"makes its one effect",
		Details: "3 orders on one partition, one relay round. The in-process hook before e-1's COMMIT kills the connection " +
			"from the scenario's own connection and waits until the server ended it, so the COMMIT fails on the lost " +
			"connection. The trigger (BEFORE INSERT on notification) raises SQLSTATE 45000; once the consumer has failed, " +
			"the scenario reads the group's committed offset from the broker, records the fault and drops the trigger. The " +
			"consumer replays each failed record from its partition's rewind",
		Metrics: []Metric{
			{Name: "rolledBack", Accept: "1", Means: "`effect_rolled_back` events"},
			{Name: "commitUnknown", Accept: "1", Means: "`commit_unknown` events"},
			{Name: "committedAtFailure", Accept: "1",
				Means: "runner: the group's committed offset on the broker once the consumer stopped after e-2 failed; " +
					"verifier: the group's last commit on the partition of e-2's unsettled record when the " +
					"`effect-insert-error` fault was recorded"},
			{Name: "replays", Accept: "2", Batch: "5",
				Means: "runner: records handled minus the topic's end offset; verifier: replays (batched: the refused insert fails " +
					"the poll's transaction of all 3, the one-by-one retry kills e-1's COMMIT and rewinds all 3; the next poll " +
					"of 3 settles e-1 and rewinds at e-2; the last settles e-2 and e-3)"},
			{Name: "effects", Accept: "3", Means: "notification rows"},
			{Name: "lag", Accept: "0",
				Means: "runner: end offset minus the group's committed offset, both from the broker; verifier: end offset of " +
					"the records known minus the group's last `offset_commit`"},
		},
		Needs: []Feature{FeatureFaultHooks},
	},
	{
		ID: "replayCrash", Consumes: true, Suite: SuiteEXT, Boundary: BoundaryAck,
		Faults: []FaultRef{{EffectInsertError, InjectSQL}, {AfterEffectBeforeOffsetCommit, InjectHook}},
		Description: "2 orders in one batch: a trigger refuses e-1's effect insert, the consumer rolls back and rewinds; " +
			"replaying both, it stops after e-1's effect and before that offset commit; consumer-2 of the group resumes at " +
			"e-1 (a duplicate for its inbox) and applies e-2: nothing the crashed member polled was committed for it",
		Details: "one partition; the stop is the in-process `after-effect-before-offset-commit` hook",
		Metrics: []Metric{
			{Name: "rolledBack", Accept: "1", Means: "`effect_rolled_back` events"},
			{Name: "committedAtFailure", Accept: "0",
				Means: "the group's committed offset when the trigger's fault was recorded (as in effectDbError)"},
			{Name: "resumedAt", Accept: "0", Means: "the offset of consumer-2's first receive"},
			{Name: "effects", Accept: "2", Means: "notification rows"},
			{Name: "lag", Accept: "0", Means: "as in effectDbError"},
		},
		Needs: []Feature{FeatureFaultHooks},
	},
	{
		ID: "consumerRestart", Consumes: true, Suite: SuiteEXT, Boundary: BoundaryAck,
		Description: "2 orders, the second published twice (a duplicate record); consumer-1 applies both, its inbox rejects " +
			"the duplicate, it commits every offset and stops; a third order is published; consumer-2 of the same group " +
			"resumes exactly at the next record and the group ends with no lag",
		Details: "one partition; the relay claims both orders and publishes e-2 twice (a producer retry the broker appended " +
			"twice: offsets 0, 1, 2); consumer-1 drains the topic (offsets 1, 2, 3 committed) and stops cleanly; the third " +
			"order is at offset 3; consumer-2 runs until it has received everything past the committed offset",
		Metrics: []Metric{
			{Name: "duplicates", Accept: "1", Means: "`inbox_reject` events"},
			{Name: "committed", Accept: "3",
				Means: "runner: the group's committed offset on the broker once consumer-1 stopped; verifier: consumer-1's " +
					"last `offset_commit`"},
			{Name: "resumedAt", Accept: "3",
				Means: "runner: the end offset minus the records consumer-2 received, a contiguous tail; verifier: the offset " +
					"of consumer-2's first `receive`"},
			{Name: "replays", Accept: "0",
				Means: "runner: records consumer-2 received below the end offset before e-3; verifier: replays"},
			{Name: "effects", Accept: "3", Means: "notification rows"},
			{Name: "lag", Accept: "0", Means: "as in effectDbError"},
		},
		Needs: []Feature{FeatureStepwiseRelay},
	},
	{
		ID: "twoConsumers", Consumes: true, Suite: SuiteEXT, Boundary: BoundaryNone,
		Description: "3 orders, the third published twice (a duplicate record); two consumers of the topic, each its own " +
			"group and inbox name (notifier, and ledger-projection-2, longer than 16 characters), drain it: each makes " +
			"its own effect of every event and its inbox rejects the duplicate; one consumer's inbox row never stands " +
			"for the other's",
		Details: "one partition; the relay claims the three orders and publishes e-3 twice (offsets 0..3), then marks them; " +
			"consumer-a (group notify-<run>, inbox notifier) drains the topic, then consumer-b (group ledger-<run>, inbox " +
			"ledger-projection-2) does: B finds A's inbox rows of every event, which must not count as its own",
		Metrics: []Metric{
			{Name: "notifierEffects", Accept: "3",
				Means: "runner: notification rows of consumer notifier; verifier: its `effect` events"},
			{Name: "notifierRejects", Accept: "1",
				Means: "runner: duplicates notifier's inbox rejected (its stats); verifier: its `inbox_reject` events"},
			{Name: "ledgerEffects", Accept: "3",
				Means: "runner: notification rows of consumer ledger-projection-2; verifier: its `effect` events"},
			{Name: "ledgerRejects", Accept: "1",
				Means: "runner: duplicates ledger-projection-2's inbox rejected (its stats); verifier: its `inbox_reject` events"},
			{Name: "bothApplied", Accept: "3",
				Means: "runner: event ids with a notification of each of the two consumers; verifier: intents with an `effect` " +
					"event of each"},
		},
		Needs: []Feature{FeatureStepwiseRelay},
	},
	{
		ID: "rebalanceSettling", Consumes: true, Suite: SuiteEXT, Boundary: BoundaryNone, OptIn: true,
		Faults: []FaultRef{{AfterEffectBeforeOffsetCommit, InjectHook}},
		Description: "4 orders on 2 partitions; consumer-1 polls them and, held after its first effect before that offset " +
			"commit, sees consumer-2 join the group (a forced rebalance while it settles the batch); it settles and commits " +
			"the batch, gives consumer-2 a partition, then closes cleanly and consumer-2 takes the other: exactly one effect " +
			"each, no commit for a partition given up, and no partition without an owner longer than spec's bound",
		Details: "the in-process hook at `after-effect-before-offset-commit` starts consumer-2 and waits until the broker's " +
			"coordinator counts two members (or a rebalance); the rebalance then waits for consumer-1's batch (kgo's " +
			"BlockRebalanceOnPoll). Both members poll in the background; once the 4 effects are written and the lag is 0, " +
			"consumer-1 closes (leaving the group) and the scenario waits until consumer-2's log shows both partitions. " +
			"The bounds are spec/liveness.go's: `UnownedAfterLeave` (3 s) after a revoke, `UnownedAfterDeath` after a loss",
		Metrics: []Metric{
			{Name: "handoffs", Example: "2",
				Means: "intervals a partition spent without an owner that ended in an assignment (the rebalance's and the close's), " +
					"each from the release, or from the next member's `group_join` when it joined later; " +
					"runner: from the members' own ownership events in their logs; verifier: the replay's"},
			{Name: "unownedMaxMs", Example: "450", Means: "the longest of them, in milliseconds"},
			{Name: "overBound", Accept: "0",
				Means: "of them, those longer than their bound (`partition-unowned-too-long` names each)"},
			{Name: "commitsAfterRevoke", Accept: "0",
				Means: "`offset_commit` events of a member on a partition it had revoked or lost and not been assigned again"},
			{Name: "duplicates", Example: "0", Means: "`inbox_reject` events (replays the inbox absorbed)"},
			{Name: "effects", Accept: "4", Means: "notification rows"},
			{Name: "lag", Accept: "0", Means: "as in effectDbError"},
		},
		Also:  "fewer than 2 handoffs makes the verifier's verdict on a PASS inconclusive (`scenario-not-exercised`)",
		Needs: []Feature{FeatureFaultHooks},
	},
}
