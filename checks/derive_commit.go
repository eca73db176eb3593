package checks

import "fmt"

// commitDerivations are the derivations of this file's scenarios, by id
// (derivations). The commit boundary (spec/commit.go).
var commitDerivations = map[string]derivation{
	"txBoundaryRollback": {
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
		conditions: rolledBackWhole,
	},
	"orderCrashWindow": {metrics: func(f facts) []metricValue {
		orders, _, _ := f.countOrders()
		return []metricValue{num("orders", orders), num("outbox", f.m.Counts().Intents),
			f.invariant("ordersWithoutIntent", "order-without-intent")}
	}},
}

// rolledBackWhole recomputes what txBoundaryRollback needs beyond its
// line (its Also in spec/commit.go), each failed condition in words.
func rolledBackWhole(f facts) []string {
	var out []string
	if st := f.requestStatus("status", 0); !st.ok {
		out = append(out, "no answer on record: "+st.why)
	} else if st.value != "500" {
		out = append(out, "the order was answered "+st.value+", not 500 (the unique conflict rolls it back)")
	}
	dup := false
	for _, id := range f.m.RolledBackOnDuplicate() {
		if in, ok := f.m.Intent(id); ok && in.Decoy {
			dup = true
		}
	}
	if !dup {
		out = append(out, "no rollback on a duplicate key (1062) of a decoy's event id is on record")
	}
	if orders, lines, _ := f.countOrders(); orders+lines > 0 {
		out = append(out, fmt.Sprintf("the rolled-back order left %d orders and %d order lines", orders, lines))
	}
	return out
}
