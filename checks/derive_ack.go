package checks

// The ack boundary (spec/ack.go).

// offsetReplay derives the scenario offsetReplay of spec/ack.go: its metrics
// as the spec's meanings define them, from the replay.
var offsetReplay = derivation{
	metrics: func(f facts) []metricValue {
		return []metricValue{
			num("replay", f.m.Counts().Replays),
			f.perIntent("inboxRejected", func(e string) metricValue { return flag("inboxRejected", f.m.Deliveries(e).Rejected > 0) }),
			f.effects("effects"),
		}
	},
}
