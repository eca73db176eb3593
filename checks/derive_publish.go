package checks

// Publish failures (spec/publish.go).

// publishFailures derives the scenario publishFailures of spec/publish.go:
// its metrics as the spec's meanings define them, from the replay.
var publishFailures = derivation{
	metrics: func(f facts) []metricValue {
		sent, _ := f.sent()
		n := f.m.Counts()
		return []metricValue{num("refused", n.RefusedPublishes), num("unknown", n.UnknownPublishes),
			num("marksAfterFailure", n.MarksAfterFailure), num("retried", n.SelfTakeovers), num("records", n.Received),
			num("effects", n.Notifications), num("duplicatesAbsorbed", n.InboxRejects), num("sent", sent)}
	},
}
