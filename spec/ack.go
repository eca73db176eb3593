package spec

// The ack boundary: the consumer commits its inbox row and effect in one
// transaction, then the offset; a crash in between is replayed and the inbox
// rejects the duplicate.
var ackScenarios = []Scenario{{
	ID: "offsetReplay", Consumes: true, Suite: SuiteU80, Boundary: BoundaryAck,
	Faults:      []FaultRef{{AfterEffectBeforeOffsetCommit, InjectHook}},
	Description: "the consumer commits the effect but not the offset; a new member of the group replays the record; the inbox rejects it",
	Design: &Design{
		Injection: "effect committed, offset not committed",
		Recovery:  "new member of the same group replays",
		Accepted:  "1 replay, inbox rejects it, 1 effect",
	},
	Metrics: []Metric{
		{Name: "replay", Accept: "1", Means: "replays (runner: the records consumer-2 received)"},
		{Name: "inboxRejected", Accept: "true", Means: "`true` when an `inbox_reject` for e exists"},
		{Name: "effects", Accept: "1", Means: "effects(e)"},
	},
	Needs: []Feature{FeatureFaultHooks},
}}
