package checks

// ackDerivations are the derivations of this file's scenarios, by id
// (derivations). The ack boundary (spec/ack.go).
var ackDerivations = map[string]derivation{
	"offsetReplay": {
		metrics: func(f facts) []metricValue {
			return []metricValue{
				num("replay", f.m.Counts().Replays),
				f.perIntent("inboxRejected", func(e string) metricValue { return flag("inboxRejected", f.m.Deliveries(e).Rejected > 0) }),
				f.effects("effects"),
			}
		},
	},
}
