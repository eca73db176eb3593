package spec

// Order placement (U79): the order transaction, idempotency keys and stock.
// Every scenario seeds stock 10 of one SKU unless its details say
// otherwise.
var placementScenarios = []Scenario{
	u79("placement", "one order of quantity 2: five writes in one transaction",
		shared("status", "201"), shared("orders", "1"), shared("stock", "8"), shared("idemRows", "1"), shared("outbox", "1")),
	u79("idempotentReplay", "the same key and body again: the stored answer, no new writes",
		shared("status", "201"),
		Metric{Name: "replayStatus", Accept: "201", Means: "the HTTP status of the answer to the second request"},
		Metric{Name: "sameOrder", Accept: "true",
			Means: "the replay's answer names the first answer's order, in the same bytes (the verifier reads the " +
				"client's record; in logs without it, the order ids the order service logged)"},
		shared("orders", "1"), shared("idemRows", "1")),
	u79("keyReuseOtherBody", "the same key with another body: 422, no writes",
		Metric{Name: "status", Accept: "422", Means: "the HTTP status of the answer to the second request (the reuse)"},
		shared("orders", "1"), shared("idemRows", "1")).
		withAlso("the reuse wrote no row (one order and one intent committed)"),
	u79("concurrentDuplicates", "10 concurrent requests with one key to two replicas of the order service, two of them racing in the database, "+
		"create exactly one order",
		Metric{Name: "requests", Accept: "10", Means: "requests answered"},
		shared("orders", "1"),
		Metric{Name: "distinctOrderIds", Accept: "1", Means: "distinct order ids among the 2xx answers"},
		Metric{Name: "created", Accept: "1",
			Means: "orders committed for the key: runner: idempotency rows; verifier: `order_committed` events"}).
		withAlso("every answer 201 or 409").
		withDetails("5 requests to each replica; the first request of each replica that finds no idempotency record waits at " +
			"the interleaving point `idem-checked` for the other's, so that two order transactions with one key race in " +
			"the database, where only the unique key on (principal, idem_key) stops the second: each replica's " +
			"in-flight guard cannot"),
	u79("insufficientStock", "quantity 2 against stock 1: 409, the transaction rolls back",
		shared("status", "409"), shared("stock", "1"), shared("orders", "0"), shared("idemRows", "0")),
	u79("noOversell", "20 concurrent orders of quantity 1 against stock 10: exactly 10 accepted",
		Metric{Name: "requests", Accept: "20", Means: "requests answered"},
		Metric{Name: "accepted", Accept: "10", Means: "answers 201"},
		Metric{Name: "rejected", Accept: "10", Means: "answers 409"},
		shared("stock", "0")).
		withAlso("every answer 201 or 409"),
	u79("twoUsersOneKey", "alice and bob send the same order with one Idempotency-Key, then again: two orders, "+
		"each replay answers its own user's, never the other's",
		shared("orders", "2"),
		Metric{Name: "distinctOrderIds", Accept: "2", Means: "distinct order ids among the 2xx answers"},
		Metric{Name: "ownReplays", Accept: "2",
			Means: "2xx answers naming the order of the same user's first 2xx answer, an order that user committed"},
		Metric{Name: "crossAnswers", Accept: "0", Means: "2xx answers naming an order another user committed"}).
		withDetails("quantity 1 each, Idempotency-Key `shared-key`"),
	u79("orderAmounts", "three orders of one, two and three lines of SKUs priced differently, quantities 1 to 4: "+
		"each amount is the sum of quantity x unit price",
		shared("orders", "3"),
		Metric{Name: "lines", Accept: "6", Means: "order_lines rows"},
		Metric{Name: "amountCents", Example: "16894", Means: "the sum of the orders' amounts, reported"},
		Metric{Name: "amountsOff", Accept: "0",
			Means: "orders whose amount differs from the lines their client asked for at the seeded prices, or from " +
				"the sum of their own lines' quantity × unit price"}).
		withDetails("SKU-A (1250 cents), SKU-B (399), SKU-C (7000), stock 20 each: 3×A; 2×B + 1×A; 1×C + 4×B + 2×A"),
	u79("generatedLoad", "seeded requests drawn from the whole input domain of POST /orders (orderapi.go), sent by "+
		"several users at once with keys reused across and within users: the verifier's reference model of the "+
		"contract predicts every answer and every write",
		Metric{Name: "requests", Accept: "300", Means: "requests answered (6 users, 50 rounds)"},
		Metric{Name: "created", Example: "142", Means: "distinct orders named by 201 answers"},
		Metric{Name: "replays", Example: "25", Means: "201 answers naming an order an earlier answer named"},
		Metric{Name: "refused", Example: "133", Means: "answers other than 201"}).
		withDetails("runner/genload draws, from seed 1, per round one request of each user: keys of 1 to 256 bytes, " +
			"case and sf-string variants, malformed keys; bodies of 0 to 17 lines, SKUs repeated, reordered, unknown, " +
			"of 1 to 65 bytes, quantities and prices at their bounds (an amount of exactly 2^63-1 cents, and one over); " +
			"tokens with each claim present, absent, malformed or near its value; order ids start past 2^53 (event ids of 18 characters)").
		withAlso("the answers and writes the reference model allows (rules answer-off-contract, write-off-contract)"),
}

// u79 declares a U79 scenario: no boundary, no fault, the order service.
func u79(id, desc string, metrics ...Metric) Scenario {
	return Scenario{ID: id, Suite: SuiteU79, Boundary: BoundaryNone, Description: desc, Metrics: metrics,
		Needs: []Feature{FeatureOrderService}}
}

// u79Means are the meanings of the metrics the U79 scenarios share.
var u79Means = map[string]string{
	"status":   "the HTTP status of the answer to the first request",
	"orders":   "order rows at the end",
	"stock":    "the SKU's stock at the end",
	"idemRows": "idempotency rows at the end",
	"outbox":   "outbox rows at the end",
	"writes": "rows added to orders, order_lines, idempotency_records and outbox, plus the absolute change of the " +
		"total stock",
}

// shared is a U79 metric of a meaning the U79 scenarios share (u79Means).
func shared(name, accept string) Metric {
	return Metric{Name: name, Accept: accept, Means: u79Means[name]}
}
