package checks

import (
	"fmt"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// consumerDerivations are the derivations of this file's scenarios, by id
// (derivations). The consumer beyond the ack boundary (spec/consumer.go).
var consumerDerivations = map[string]derivation{
	"orderLifecycle": {
		metrics: func(f facts) []metricValue {
			n := f.m.Counts()
			var orders int64
			for o := range f.m.Orders() {
				if o.Row {
					orders++
				}
			}
			return []metricValue{num("orders", orders), num("intents", n.Intents), num("partitions", n.Partitions),
				num("splitOrders", n.SplitAggregates), num("outOfOrder", n.EffectsOutOfOrder), num("effects", n.Notifications)}
		},
		exercised: func(f facts) string {
			if f.m.Counts().Partitions < 2 {
				return "every record is on one partition: no order between partitions was at stake"
			}
			return ""
		},
	},
	"effectDbError": {
		metrics: func(f facts) []metricValue {
			n := f.m.Counts()
			return []metricValue{num("rolledBack", n.RolledBackEffects), num("commitUnknown", n.UnknownCommits), committedAtFailure(f),
				num("replays", n.Replays), num("effects", n.Notifications), num("lag", n.Lag)}
		},
	},
	"replayCrash": {
		metrics: func(f facts) []metricValue {
			n := f.m.Counts()
			return []metricValue{num("rolledBack", n.RolledBackEffects), committedAtFailure(f), resumedAt(f), num("effects", n.Notifications),
				num("lag", n.Lag)}
		},
	},
	"consumerRestart": {
		metrics: func(f facts) []metricValue {
			n := f.m.Counts()
			committed := unknown("committed", "consumer-1 committed no offset")
			if ps := f.m.Member("consumer-1"); len(ps) == 1 && ps[0].LastCommitted >= 0 {
				committed = num("committed", ps[0].LastCommitted)
			}
			return []metricValue{num("duplicates", n.InboxRejects), committed, resumedAt(f), num("replays", n.Replays),
				num("effects", n.Notifications), num("lag", n.Lag)}
		},
	},
	"twoConsumers": {metrics: twoConsumersMetrics},
	"rebalanceSettling": {
		metrics: func(f facts) []metricValue {
			n := f.m.Counts()
			gaps := f.m.Unowned()
			var longest time.Duration
			var over int64
			for _, g := range gaps {
				longest = max(longest, g.Duration())
				if g.Duration() > g.Bound {
					over++
				}
			}
			return []metricValue{num("handoffs", int64(len(gaps))), num("unownedMaxMs", longest.Milliseconds()), num("overBound", over),
				num("commitsAfterRevoke", f.m.CommitsReleased()), num("duplicates", n.InboxRejects), num("effects", n.Notifications),
				num("lag", n.Lag)}
		},
		exercised: func(f facts) string {
			if n := len(f.m.Unowned()); n < 2 {
				return fmt.Sprintf("%d partition(s) went from one owner to the next: no rebalance and close were shown", n)
			}
			return ""
		},
	},
}

// twoConsumersMetrics: each inbox consumer's effect and inbox_reject
// events, and the intents with an effect of each (a consumer no event
// names has none: it did not run, or ran under another name).
func twoConsumersMetrics(f facts) []metricValue {
	const notifier, ledger = "notifier", "ledger-projection-2"
	var out []metricValue
	for _, c := range []struct{ name, metric string }{{notifier, "notifier"}, {ledger, "ledger"}} {
		var ic model.InboxConsumer
		for _, x := range f.m.InboxConsumers() {
			if x.Name == c.name {
				ic = x
			}
		}
		out = append(out, num(c.metric+"Effects", ic.Effects), num(c.metric+"Rejects", ic.Rejects))
	}
	var both int64
	for in := range f.m.Intents() {
		if f.m.EffectBy(notifier, in.EventID) && f.m.EffectBy(ledger, in.EventID) {
			both++
		}
	}
	return append(out, num("bothApplied", both))
}

// committedAtFailure: the offset the group had committed when the trigger's
// fault (effect-insert-error) was recorded, its record unsettled.
func committedAtFailure(f facts) metricValue {
	if c, ok := f.m.CommittedAtFault(string(spec.EffectInsertError)); ok {
		return num("committedAtFailure", c)
	}
	return unknown("committedAtFailure", "no fault at "+string(spec.EffectInsertError)+" naming an unsettled record")
}

// resumedAt: the offset of consumer-2's first receive.
func resumedAt(f facts) metricValue {
	if ps := f.m.Member("consumer-2"); len(ps) == 1 && ps[0].FirstReceived >= 0 {
		return num("resumedAt", ps[0].FirstReceived)
	}
	return unknown("resumedAt", "consumer-2 received no record")
}
