package spec

// Order placement (U79): the order transaction, idempotency keys and stock.
var placementScenarios = []Scenario{
	u79("placement", "one order of quantity 2: five writes in one transaction",
		Metric{"status", "201"}, Metric{"orders", "1"}, Metric{"stock", "8"}, Metric{"idemRows", "1"}, Metric{"outbox", "1"}),
	u79("idempotentReplay", "the same key and body again: the stored answer, no new writes",
		Metric{"status", "201"}, Metric{"replayStatus", "201"}, Metric{"sameOrder", "true"}, Metric{"orders", "1"},
		Metric{"idemRows", "1"}),
	u79("keyReuseOtherBody", "the same key with another body: 422, no writes",
		Metric{"status", "422"}, Metric{"orders", "1"}, Metric{"idemRows", "1"}),
	u79("concurrentDuplicates", "10 concurrent requests with one key to two replicas of the order service, two of them racing in the database, "+
		"create exactly one order",
		Metric{"requests", "10"}, Metric{"orders", "1"}, Metric{"distinctOrderIds", "1"}, Metric{"created", "1"}),
	u79("insufficientStock", "quantity 2 against stock 1: 409, the transaction rolls back",
		Metric{"status", "409"}, Metric{"stock", "1"}, Metric{"orders", "0"}, Metric{"idemRows", "0"}),
	u79("noOversell", "20 concurrent orders of quantity 1 against stock 10: exactly 10 accepted",
		Metric{"requests", "20"}, Metric{"accepted", "10"}, Metric{"rejected", "10"}, Metric{"stock", "0"}),
	u79("twoUsersOneKey", "alice and bob send the same order with one Idempotency-Key, then again: two orders, "+
		"each replay answers its own user's, never the other's",
		Metric{"orders", "2"}, Metric{"distinctOrderIds", "2"}, Metric{"ownReplays", "2"}, Metric{"crossAnswers", "0"}),
	u79("orderAmounts", "three orders of one, two and three lines of SKUs priced differently, quantities 1 to 4: "+
		"each amount is the sum of quantity x unit price",
		Metric{"orders", "3"}, Metric{"lines", "6"}, Metric{"amountCents", ""}, Metric{"amountsOff", "0"}),
}

// u79 declares a U79 scenario: no boundary, no fault, the order service.
func u79(id, desc string, metrics ...Metric) Scenario {
	return Scenario{ID: id, Suite: SuiteU79, Boundary: BoundaryNone, Description: desc, Metrics: metrics,
		Needs: []Feature{FeatureOrderService}}
}
