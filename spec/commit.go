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
		Metrics: []Metric{{"stock", "10"}, {"idemRows", "0"}, {"outboxRollback", "true"}, {"seedUntouched", "true"}},
		Needs:   []Feature{FeatureOrderService},
	},
	{
		ID: "orderCrashWindow", Suite: SuiteEXT, Boundary: BoundaryCommit,
		Faults:      []FaultRef{{AfterOrderCommitBeforeOutbox, InjectHook}},
		Description: "a crash armed between the order commit and the intent write; only an intent written outside the order transaction can fall into it",
		Metrics:     []Metric{{"orders", "1"}, {"outbox", "1"}, {"ordersWithoutIntent", "0"}},
		Needs:       []Feature{FeatureOrderService, FeatureFaultHooks},
	},
}
