package checks

// Order placement (spec/placement.go).
func init() {
	derive("placement", derivation{metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		return []metricValue{f.requestStatus("status", 0), num("orders", orders), num("stock", f.stockSum()),
			num("idemRows", idem), num("outbox", int64(len(f.m.rows)))}
	}})
	derive("idempotentReplay", derivation{metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		same := unknown("sameOrder", "fewer than two answers")
		if len(f.m.requests) >= 2 {
			a, b := f.m.requests[0].orderID, f.m.requests[1].orderID
			same = flag("sameOrder", a != nil && b != nil && *a == *b)
		}
		return []metricValue{f.requestStatus("status", 0), f.requestStatus("replayStatus", 1), same,
			num("orders", orders), num("idemRows", idem)}
	}})
	derive("keyReuseOtherBody", derivation{metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		return []metricValue{f.requestStatus("status", 1), num("orders", orders), num("idemRows", idem)}
	}})
	derive("concurrentDuplicates", derivation{metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		return []metricValue{num("requests", f.m.nRequests), num("orders", orders),
			num("distinctOrderIds", int64(len(f.m.okOrderIDs))), num("created", idem)}
	}})
	derive("insufficientStock", derivation{metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		return []metricValue{f.requestStatus("status", 0), num("stock", f.stockSum()), num("orders", orders), num("idemRows", idem)}
	}})
	derive("noOversell", derivation{metrics: func(f facts) []metricValue {
		return []metricValue{num("requests", f.m.nRequests), num("accepted", f.m.statusCount[201]),
			num("rejected", f.m.statusCount[409]), f.seededStock("stock")}
	}})
}
