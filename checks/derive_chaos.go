package checks

import (
	"fmt"
	"slices"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// chaosDerivations are the derivations of this file's scenarios, by id
// (derivations). The chaos scenario (spec/chaos.go).
var chaosDerivations = map[string]derivation{
	"chaos": {
		metrics: func(f facts) []metricValue {
			n := f.m.Counts()
			orders, _, _ := f.countOrders()
			missing := f.missingEffects()
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

// chaosLag is the lag of the groups that received records, summed.
func (f facts) chaosLag() metricValue {
	groups := f.m.Groups()
	if len(groups) == 0 {
		return unknown("lag", "no consumer group received a record")
	}
	var lag int64
	for _, g := range groups {
		lag += f.m.Lag(g)
	}
	return num("lag", lag)
}

// missingEffects counts the intents without an effect, per inbox
// consumer: each the selection declares (a consumer that ran and wrote
// nothing, or never ran, still owes its effects) and each an event names
// (one that ran under a name the selection does not know). With neither,
// an intent without any effect counts once.
func (f facts) missingEffects() int64 {
	names := slices.Clone(f.inboxes)
	for _, c := range f.m.InboxConsumers() {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	var missing int64
	for in := range f.m.Intents() {
		if len(names) == 0 && f.m.Deliveries(in.EventID).Effects == 0 {
			missing++
		}
		for _, n := range names {
			if !f.m.EffectBy(n, in.EventID) {
				missing++
			}
		}
	}
	return missing
}

// declaredInboxes are the inbox consumers run.selection declares: the
// chaos scenario's (spec.ChaosInboxes), nil without it.
func (c *checker) declaredInboxes() []string {
	if c.selected == nil || c.selected.Chaos == nil {
		return nil
	}
	return spec.ChaosInboxes(c.selected.Chaos.Inboxes)
}
