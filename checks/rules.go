package checks

// Rule is the stable id of a finding of the checker itself: what it checks
// around the replay. A Reason's rule is one of these, a rule of the replay
// model (model.Rules, checks/model/rules.go), or the id of an invariant
// whose anti-join returned rows on the replayed end state
// (invariants/sql/<id>.sql).
type Rule string

// The checker's rules, in the order Verify checks (Rules describes each).
const (
	// The run and what the evidence derives from its scenarios.
	RuleRunInterrupted        Rule = "run-interrupted"
	RuleRunArgs               Rule = "run-args"
	RuleScenarioMissing       Rule = "scenario-missing"
	RuleScenarioNotSelected   Rule = "scenario-not-selected"
	RuleBoundaryNotRun        Rule = "boundary-not-run"
	RuleTimeOutsideRun        Rule = "time-outside-run"
	RuleSummaryMismatch       Rule = "summary-mismatch"
	RuleBoundaryMismatch      Rule = "boundary-mismatch"
	RuleProofBoundaryMismatch Rule = "proof-boundary-mismatch"
	RuleSUTMismatch           Rule = "sut-mismatch"
	RuleBuildInfo             Rule = "build-info"
	RuleSourceDigest          Rule = "source-digest"

	// A scenario against the spec.
	RuleScenarioDuplicate Rule = "scenario-duplicate"
	RuleScenarioMismatch  Rule = "scenario-mismatch"
	RuleScenarioUnknown   Rule = "scenario-unknown"
	RuleScenarioNotRun    Rule = "scenario-not-run"
	RuleScenarioFailed    Rule = "scenario-failed"

	// The logs' integrity.
	RuleLogMissing       Rule = "log-missing"
	RuleLogPath          Rule = "log-path"
	RuleLogDuplicate     Rule = "log-duplicate"
	RuleLogShared        Rule = "log-shared"
	RuleLogUnreadable    Rule = "log-unreadable"
	RuleLogDigest        Rule = "log-digest"
	RuleLogLines         Rule = "log-lines"
	RuleLogTruncated     Rule = "log-truncated"
	RuleLogTooBroken     Rule = "log-too-broken"
	RuleEventLineTooLong Rule = "event-line-too-long"

	// Each event line.
	RuleEventSchema Rule = "event-schema"
	RuleEventDecode Rule = "event-decode"
	RuleSeqOrder    Rule = "seq-order"
	RuleSeqGap      Rule = "seq-gap"
	RuleRunID       Rule = "run-id"
	RuleLogScenario Rule = "log-scenario"
	RuleLogActor    Rule = "log-actor"
	RuleTimeOrder   Rule = "time-order"

	// Live invariant results, the replayed end state in SQL, table digests.
	RuleInvariantDuplicate   Rule = "invariant-duplicate"
	RuleInvariantLogMismatch Rule = "invariant-log-mismatch"
	RuleInvariantLogMissing  Rule = "invariant-log-missing"
	RuleSQLEngine            Rule = "sql-engine"
	RuleInvariantNotRecorded Rule = "invariant-not-recorded"
	RuleInvariantMismatch    Rule = "invariant-mismatch"
	RuleInvariantUnknown     Rule = "invariant-unknown"
	RuleTableDuplicate       Rule = "table-duplicate"
	RuleTableNotRecorded     Rule = "table-not-recorded"
	RuleTableDigest          Rule = "table-digest"
	RuleTableUnknown         Rule = "table-unknown"

	// Metrics, status and observation line recomputed.
	RuleMetricMismatch            Rule = "metric-mismatch"
	RuleMetricNotRecomputable     Rule = "metric-not-recomputable"
	RuleFaultNotInjected          Rule = "fault-not-injected"
	RuleScenarioNotExercised      Rule = "scenario-not-exercised"
	RuleStatusNotRecomputable     Rule = "status-not-recomputable"
	RuleStatusMismatch            Rule = "status-mismatch"
	RuleLineMismatch              Rule = "line-mismatch"
	RulePlantedMismatch           Rule = "planted-mismatch"
	RulePlantedUnknown            Rule = "planted-unknown"
	RuleNegativeControlNotTripped Rule = "negative-control-not-tripped"
	RuleNegativeControlNotRun     Rule = "negative-control-not-run"
)

// RuleInfo describes a rule of the checker in one line.
type RuleInfo struct {
	Rule        Rule
	Description string
}

// Rules is every rule of the checker. Those marked (inconclusive) say that
// the evidence cannot decide something; the others fail it.
var Rules = []RuleInfo{
	{RuleRunInterrupted, "the run was interrupted before every selected scenario finished (inconclusive)"},
	{RuleRunArgs, "run.args cannot be read as the arguments of orderflow-audit run (inconclusive)"},
	{RuleScenarioMissing, "a scenario that run.args select is not in the evidence"},
	{RuleScenarioNotSelected, "the evidence has a scenario that run.args do not select"},
	{RuleBoundaryNotRun, "a boundary whose scenario was not selected or did not run (inconclusive)"},
	{RuleTimeOutsideRun, "the run ends before it starts, or an event's time is outside the run (give or take 2 s)"},
	{RuleSummaryMismatch, "the summary's counts differ from the scenarios listed"},
	{RuleBoundaryMismatch, "the boundary table differs from the one the scenarios give"},
	{RuleProofBoundaryMismatch, "the proof-boundary matrix differs from the one this verifier derives from the evidence"},
	{RuleSUTMismatch, "the system under test's layers do not follow from its features, or a scenario ran that needs a feature it does not claim"},
	{RuleBuildInfo, "tool.build is not the shape of a Go build stamp (toolchain version, module, a commit id or none), or its revision disagrees with tool.revision"},
	{RuleSourceDigest, "the system under test's source digest is not a sha256 of at least one file of the module's directories (the reference: its packages), or is missing from evidence that records tool.build"},

	{RuleScenarioDuplicate, "a scenario is listed twice"},
	{RuleScenarioMismatch, "a known scenario's suite, boundary or fault points differ from the spec"},
	{RuleScenarioUnknown, "a scenario the verifier does not know: its metrics and status cannot be recomputed (inconclusive)"},
	{RuleScenarioNotRun, "a scenario that did not run (inconclusive)"},
	{RuleScenarioFailed, "the runner reports that the scenario failed"},

	{RuleLogMissing, "a referenced event log does not exist next to the evidence file"},
	{RuleLogPath, "a log path is rejected: absolute, with .. or a backslash, through a symlink out of the directory, not a file"},
	{RuleLogDuplicate, "one log is referenced twice by a scenario"},
	{RuleLogShared, "one log is referenced by two scenarios"},
	{RuleLogUnreadable, "a log could not be read"},
	{RuleLogDigest, "a log's sha256 differs from the one the evidence recorded"},
	{RuleLogLines, "a log's line count differs from the one the evidence recorded"},
	{RuleLogTruncated, "a log's last line is cut (no newline): what its actor did after it is unknown (inconclusive)"},
	{RuleLogTooBroken, "more lines of a log than the cap needed the full schema validator; the rest were not checked"},
	{RuleEventLineTooLong, "a line longer than evidence.MaxLineBytes: it and the lines after it were not read"},

	{RuleEventSchema, "a line is not a valid event against the event schema"},
	{RuleEventDecode, "a line valid against the event schema does not decode to an event"},
	{RuleSeqOrder, "a seq not after the one before it in its log: events reordered or duplicated"},
	{RuleSeqGap, "seq jumps between consecutive lines of a log: a line is missing"},
	{RuleRunID, "an event of another run"},
	{RuleLogScenario, "an event of another scenario in a log the scenario references"},
	{RuleLogActor, "an event of another actor than the log's"},
	{RuleTimeOrder, "an event's time is before the line's before it in its log"},

	{RuleInvariantDuplicate, "the live result of an invariant is listed twice"},
	{RuleInvariantLogMismatch, "a live invariant result differs from the invariant event of the log, or is missing for it"},
	{RuleInvariantLogMissing, "a live invariant result that no invariant event records"},
	{RuleSQLEngine, "the replayed end state could not be loaded or queried in SQL (inconclusive)"},
	{RuleInvariantNotRecorded, "the evidence has no live result of an invariant (inconclusive)"},
	{RuleInvariantMismatch, "an invariant's live result differs from its result on the replayed end state"},
	{RuleInvariantUnknown, "a live result of an invariant the verifier does not have (inconclusive)"},
	{RuleTableDuplicate, "a table is digested twice"},
	{RuleTableNotRecorded, "the evidence has no digest of a table (inconclusive)"},
	{RuleTableDigest, "a table's live digest differs from the replayed end state's"},
	{RuleTableUnknown, "a digest of a table the verifier does not replay (inconclusive)"},

	{RuleMetricMismatch, "a claimed metric differs from the recomputed one, is not the scenario's, is missing or out of order"},
	{RuleMetricNotRecomputable, "a claimed metric the events cannot determine"},
	{RuleFaultNotInjected, "a PASS at a boundary whose fault injection the events do not show"},
	{RuleScenarioNotExercised, "a PASS whose events do not show the situation the scenario exists to provoke (inconclusive)"},
	{RuleStatusNotRecomputable, "a PASS that needs a metric the events cannot determine"},
	{RuleStatusMismatch, "a PASS whose recomputed metrics do not meet the acceptance, or whose events show a condition it needs beyond its metrics failed"},
	{RuleLineMismatch, "the observation line differs from what the status and the (claimed or recomputed) metrics say"},
	{RulePlantedMismatch, "run.planted differs from the bug run.args plant"},
	{RulePlantedUnknown, "run.planted names a bug the verifier's table of negative controls does not know"},
	{RuleNegativeControlNotTripped, "a planted bug's exposing scenario ran, but none of the rules that catch it did"},
	{RuleNegativeControlNotRun, "no scenario that exposes the planted bug ran (inconclusive)"},
}
