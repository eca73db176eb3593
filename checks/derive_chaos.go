package checks

import (
	"fmt"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// chaosDerivations are the derivations of this file's scenarios, by id
// (derivations). The chaos scenario (spec/chaos.go).
var chaosDerivations = map[string]derivation{
	"chaos": {
		metrics: func(f facts) []metricValue {
			n := f.m.Counts()
			orders, _, _ := f.countOrders()
			var missing int64
			for in := range f.m.Intents() {
				if f.m.Deliveries(in.EventID).Effects == 0 {
					missing++
				}
			}
			unknown, resolved := f.m.UnknownPublishes()
			commits, decided := f.m.UnknownCommits()
			unknown, resolved = unknown+commits, resolved+decided
			return []metricValue{
				num("orders", orders), num("events", n.Intents), num("deliveries", n.Received+n.Replays),
				num("duplicatesAbsorbed", n.InboxRejects), num("effects", n.Notifications), num("missing", missing),
				f.chaosLag(), text("faults", spec.FormatFaultCounts(f.m.FaultKinds())),
				text("unknownResolved", fmt.Sprintf("%d/%d", resolved, unknown)),
			}
		},
		// A run without a fault (--only-faults none, or nothing to hit)
		// shows the load alone: its PASS says nothing about faults.
		exercised: func(f facts) string {
			if len(f.m.FaultKinds()) == 0 {
				return "no fault event of the nemesis: the load ran without faults"
			}
			return ""
		},
	},
}

// chaosLag is the lag of the one group that received records.
func (f facts) chaosLag() metricValue {
	groups := f.m.Groups()
	if len(groups) != 1 {
		return unknown("lag", fmt.Sprintf("the lag is of one consumer group; records were received by %d (%s)",
			len(groups), strings.Join(groups, ", ")))
	}
	return num("lag", f.m.Lag(groups[0]))
}
