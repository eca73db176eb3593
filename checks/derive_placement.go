package checks

// Order placement (spec/placement.go).
func init() {
	derive("placement", derivation{metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		return []metricValue{f.requestStatus("status", 0), num("orders", orders), num("stock", f.stockSum()),
			num("idemRows", idem), num("outbox", f.m.Counts().Intents)}
	}})
	derive("idempotentReplay", derivation{metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		same := unknown("sameOrder", "fewer than two answers")
		if reqs := f.m.Requests(); len(reqs) >= 2 {
			a, b := reqs[0].OrderID, reqs[1].OrderID
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
		n := f.m.Counts()
		return []metricValue{num("requests", n.Requests), num("orders", orders),
			num("distinctOrderIds", n.OKOrders), num("created", idem)}
	}})
	derive("insufficientStock", derivation{metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		return []metricValue{f.requestStatus("status", 0), num("stock", f.stockSum()), num("orders", orders), num("idemRows", idem)}
	}})
	derive("noOversell", derivation{metrics: func(f facts) []metricValue {
		return []metricValue{num("requests", f.m.Counts().Requests), num("accepted", f.m.AnsweredWith(201)),
			num("rejected", f.m.AnsweredWith(409)), f.seededStock("stock")}
	}})
}
