package spec

// The commit boundary: the order, its line, the stock decrement, the
// idempotency record and the outbox intent commit together or not at all.
var commitScenarios = []Scenario{
	{
		ID: "txBoundaryRollback", Suite: SuiteU80, Boundary: BoundaryCommit,
		Faults:      []FaultRef{{OutboxUniqueConflict, InjectSQL}},
		Description: "a seeded decoy outbox row makes the order's last write (the intent) hit the unique key; the whole order transaction must roll back",
		Design: &Design{
			Injection: "unique conflict on the outbox event_id at the last write (a seeded decoy row)",
			Recovery:  "whole rollback",
			Accepted:  "stock, orders, idempotency, outbox all as before; decoy row untouched",
		},
		Metrics: []Metric{
			{Name: "stock", Accept: "10", Means: "stock of the SKU at the end"},
			{Name: "idemRows", Accept: "0", Means: "idempotency rows"},
			{Name: "outboxRollback", Accept: "true",
				Means: "`true` when no outbox row other than the seeded decoys (aggregate_id -1) exists"},
			{Name: "seedUntouched", Accept: "true",
				Means: "`true` when the decoy's state, claim_version, aggregate id and payload sha256 observed after the " +
					"rollback equal the seeded ones and no claim/mark/lease event names it"},
		},
		Also: "the client got 500, the order service rolled back on the duplicate key (error 1062) of the decoy's event id, " +
			"no order or order line is left",
		Needs: []Feature{FeatureOrderService},
	},
	{
		ID: "orderCrashWindow", Suite: SuiteEXT, Boundary: BoundaryCommit,
		Faults:      []FaultRef{{AfterOrderCommitBeforeOutbox, InjectHook}},
		Description: "a crash armed between the order commit and the intent write; only an intent written outside the order transaction can fall into it",
		Details:     "1 order, the point armed to crash once; the scenario records the fault when the point fired",
		Metrics: []Metric{
			{Name: "orders", Accept: "1", Means: "order rows at the end"},
			{Name: "outbox", Accept: "1", Means: "outbox rows at the end"},
			{Name: "ordersWithoutIntent", Accept: "0", Means: "rows of the invariant `order-without-intent`"},
		},
		Needs: []Feature{FeatureOrderService, FeatureFaultHooks},
	},
}
