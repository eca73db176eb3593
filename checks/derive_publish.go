package checks

// Publish failures (spec/publish.go).
// publishFailures: refused = publish events with an error; unknown =
// publish_unknown events; marksAfterFailure = marks that hit a row
// after their claim's last publish failed; retried = takeovers by the
// claim id that held the row; records = distinct records received;
// duplicatesAbsorbed = inbox_reject events.
var publishFailures = derivation{
	metrics: func(f facts) []metricValue {
		sent, _ := f.sent()
		n := f.m.Counts()
		return []metricValue{num("refused", n.RefusedPublishes), num("unknown", n.UnknownPublishes),
			num("marksAfterFailure", n.MarksAfterFailure), num("retried", n.SelfTakeovers), num("records", n.Received),
			num("effects", n.Notifications), num("duplicatesAbsorbed", n.InboxRejects), num("sent", sent)}
	},
}
