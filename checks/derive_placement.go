package checks

import "fmt"

// placementDerivations are the derivations of this file's scenarios, by id
// (derivations). Order placement (spec/placement.go).
var placementDerivations = map[string]derivation{
	"generatedLoad": {metrics: func(f facts) []metricValue { return f.generatedCounts() }},
	"placement": {metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		return []metricValue{f.requestStatus("status", 0), num("orders", orders), num("stock", f.stockSum()),
			num("idemRows", idem), num("outbox", f.m.Counts().Intents)}
	}},
	"idempotentReplay": {metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		same := unknown("sameOrder", "fewer than two answers")
		if cl := f.m.ClientRequests(); len(cl) >= 2 {
			// The client's record: the same order and, byte for byte,
			// the same answer.
			a, b := cl[0], cl[1]
			same = flag("sameOrder", a.OrderID != nil && b.OrderID != nil && *a.OrderID == *b.OrderID &&
				a.BodySHA256 != "" && a.BodySHA256 == b.BodySHA256)
		} else if reqs := f.m.Requests(); len(reqs) >= 2 {
			a, b := reqs[0].OrderID, reqs[1].OrderID
			same = flag("sameOrder", a != nil && b != nil && *a == *b)
		}
		return []metricValue{f.requestStatus("status", 0), f.requestStatus("replayStatus", 1), same,
			num("orders", orders), num("idemRows", idem)}
	}},
	"keyReuseOtherBody": {
		metrics: func(f facts) []metricValue {
			orders, _, idem := f.countOrders()
			return []metricValue{f.requestStatus("status", 1), num("orders", orders), num("idemRows", idem)}
		},
		// The runner: the reuse wrote no row. Every row the replay holds
		// comes from an order_committed (or an intent written apart).
		conditions: func(f facts) []string {
			n := 0
			for range f.m.Orders() {
				n++
			}
			if intents := f.m.Counts().Intents; n > 1 || intents > 1 {
				return []string{fmt.Sprintf("the request that reused the key with another body wrote rows: %d orders and %d intents committed, want 1",
					n, intents)}
			}
			return nil
		},
	},
	"concurrentDuplicates": {
		metrics: func(f facts) []metricValue {
			orders, _, idem := f.countOrders()
			return []metricValue{num("requests", f.answerCount()), num("orders", orders),
				num("distinctOrderIds", f.okOrders()), num("created", idem)}
		},
		conditions: onlyStatuses(201, 409), // the runner: a duplicate gets 201 or 409
	},
	"insufficientStock": {metrics: func(f facts) []metricValue {
		orders, _, idem := f.countOrders()
		return []metricValue{f.requestStatus("status", 0), num("stock", f.stockSum()), num("orders", orders), num("idemRows", idem)}
	}},
	"noOversell": {
		metrics: func(f facts) []metricValue {
			return []metricValue{num("requests", f.answerCount()), num("accepted", f.answeredWith(201)),
				num("rejected", f.answeredWith(409)), f.seededStock("stock")}
		},
		conditions: onlyStatuses(201, 409), // the runner: an order gets 201 or 409
	},
}

// generatedCounts reads the client's record of a generated load: the
// requests, the distinct orders 201 answers named, the 201 answers
// naming an order an earlier one named, and the other answers.
func (f facts) generatedCounts() []metricValue {
	var requests, created, replays, refused int64
	seen := map[int64]bool{}
	for _, r := range f.m.ClientRequests() {
		requests++
		switch {
		case r.Status != 201 || r.OrderID == nil:
			refused++
		case seen[*r.OrderID]:
			replays++
		default:
			seen[*r.OrderID] = true
			created++
		}
	}
	return []metricValue{num("requests", requests), num("created", created), num("replays", replays), num("refused", refused)}
}
