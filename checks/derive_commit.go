package checks

// The commit boundary (spec/commit.go).
func init() {
	derive("txBoundaryRollback", derivation{
		metrics: func(f facts) []metricValue {
			_, _, idem := f.countOrders()
			rollback := true
			for in := range f.m.Intents() {
				if in.AggregateID != -1 {
					rollback = false
				}
			}
			return []metricValue{f.seededStock("stock"), num("idemRows", idem), flag("outboxRollback", rollback),
				flag("seedUntouched", f.seedUntouched())}
		},
		injected: func(f facts) string {
			for _, id := range f.m.RolledBack() {
				if in, ok := f.m.Intent(id); ok && in.Decoy {
					return ""
				}
			}
			return "no order transaction rolled back on a seeded decoy's event id (the unique conflict)"
		},
	})
	derive("orderCrashWindow", derivation{metrics: func(f facts) []metricValue {
		orders, _, _ := f.countOrders()
		return []metricValue{num("orders", orders), num("outbox", f.m.Counts().Intents),
			f.invariant("ordersWithoutIntent", "order-without-intent")}
	}})
}
