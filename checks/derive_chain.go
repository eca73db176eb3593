package checks

import "strings"

// chainDerivations are the derivations of this file's scenarios, by id
// (derivations). The chain without faults (spec/chain.go).
var chainDerivations = map[string]derivation{
	"normalChain": {metrics: func(f facts) []metricValue {
		return []metricValue{
			f.perIntent("outboxTx", func(e string) metricValue {
				states := f.m.ObservedStates(e)
				if len(states) == 0 {
					return unknown("outboxTx", "no observe event for "+e)
				}
				return text("outboxTx", strings.Join(states, "→"))
			}),
			f.deliveries("deliveries"),
			f.effects("effects"),
			f.perIntent("duplicateBlocked", func(e string) metricValue {
				if f.m.Deliveries(e).Rejected > 0 {
					return text("duplicateBlocked", "unique")
				}
				return text("duplicateBlocked", "none")
			}),
		}
	}},
	"businessInvariants": {metrics: func(f facts) []metricValue {
		sent, linked := f.sent()
		n := f.m.Counts()
		return []metricValue{
			num("sent", sent), num("effects", n.Notifications), num("inbox", n.InboxRows),
			num("linkedOrders", linked),
			f.invariant("orphanSent", "orphan-sent"),
			f.invariant("sentWithoutEffect", "sent-without-effect"),
			f.invariant("effectWithoutInbox", "effect-without-inbox"),
			f.invariant("duplicatedEffects", "duplicated-effects"),
			f.invariant("orphanEffects", "orphan-effects"),
		}
	}},
}
