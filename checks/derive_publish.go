package checks

// publishDerivations are the derivations of this file's scenarios, by id
// (derivations). Publish failures (spec/publish.go).
var publishDerivations = map[string]derivation{
	"publishFailures": {
		metrics: func(f facts) []metricValue {
			sent, _ := f.sent()
			n := f.m.Counts()
			return []metricValue{num("refused", n.RefusedPublishes), num("unknown", n.UnknownPublishes),
				num("marksAfterFailure", n.MarksAfterFailure), num("retried", n.SelfTakeovers), num("records", n.Received),
				num("effects", n.Notifications), num("duplicatesAbsorbed", n.InboxRejects), num("sent", sent)}
		},
	},
	"publishBatchTimeout": {
		metrics: func(f facts) []metricValue {
			sent, _ := f.sent()
			n := f.m.Counts()
			return []metricValue{num("claims", n.Claims), num("unknown", n.UnknownPublishes),
				num("pastTimeout", n.PublishesPastTimeout), num("effects", n.Notifications), num("sent", sent)}
		},
	},
	"relayPoll": {
		metrics: func(f facts) []metricValue {
			sent, _ := f.sent()
			n := f.m.Counts()
			return []metricValue{num("claims", n.Claims), num("sent", sent), num("effects", n.Notifications)}
		},
	},
	"versionsAfterRefusal": {
		metrics: func(f facts) []metricValue {
			sent, _ := f.sent()
			n := f.m.Counts()
			return []metricValue{num("refused", n.RefusedPublishes), num("aheadOfVersion", n.ReceivesOutOfVersion),
				num("records", n.Received), num("outOfOrder", n.EffectsOutOfOrder), num("effects", n.Notifications), num("sent", sent)}
		},
	},
}
