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
	RuleRunInterrupted      Rule = "run-interrupted"
	RuleSelectionMissing    Rule = "selection-missing"
	RuleScenarioMissing     Rule = "scenario-missing"
	RuleScenarioNotSelected Rule = "scenario-not-selected"
	RuleBoundaryNotRun      Rule = "boundary-not-run"
	RuleTimeOutsideRun      Rule = "time-outside-run"
	RuleSummaryMismatch     Rule = "summary-mismatch"
	RuleBoundaryMismatch    Rule = "boundary-mismatch"
	RuleProofMismatch       Rule = "proof-mismatch"
	RuleSUTMismatch         Rule = "sut-mismatch"
	RuleBuildInfo           Rule = "build-info"
	RuleSourceDigest        Rule = "source-digest"

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

	// The witnesses: their files, whether they are this run's, and every
	// actor event held against them (package checks/crosscheck).
	RuleWitnessMissing          Rule = "witness-missing"
	RuleWitnessPath             Rule = "witness-path"
	RuleWitnessFileMissing      Rule = "witness-file-missing"
	RuleWitnessSize             Rule = "witness-size"
	RuleWitnessDigest           Rule = "witness-digest"
	RuleWitnessUnlisted         Rule = "witness-unlisted"
	RuleWitnessDamaged          Rule = "witness-damaged"
	RuleWitnessServer           Rule = "witness-server"
	RuleWitnessGTID             Rule = "witness-gtid"
	RuleWitnessForeign          Rule = "witness-foreign"
	RuleWitnessScenarioUnlisted Rule = "witness-scenario-unlisted"
	RuleWitnessScenarioAbsent   Rule = "witness-scenario-absent"
	RuleWitnessNames            Rule = "witness-names"
	RuleWitnessWrite            Rule = "witness-write"
	RuleWitnessOrderTx          Rule = "witness-order-tx"
	RuleWitnessRollbackWrote    Rule = "witness-rollback-wrote"
	RuleWitnessAnswer           Rule = "witness-answer"
	RuleWitnessClaim            Rule = "witness-claim"
	RuleWitnessMark             Rule = "witness-mark"
	RuleWitnessLeaseExpired     Rule = "witness-lease-expired"
	RuleWitnessLeaseClock       Rule = "witness-lease-clock"
	RuleWitnessClaimBatch       Rule = "witness-claim-batch"
	RuleWitnessClaimWait        Rule = "witness-claim-wait"
	RuleWitnessColumn           Rule = "witness-column"
	RuleWitnessEffectTx         Rule = "witness-effect-tx"
	RuleWitnessRejectWrote      Rule = "witness-reject-wrote"
	RuleWitnessUnloggedWrite    Rule = "witness-unlogged-write"
	RuleWitnessPublish          Rule = "witness-publish"
	RuleWitnessPublishRefused   Rule = "witness-publish-refused"
	RuleWitnessReceive          Rule = "witness-receive"
	RuleWitnessUnloggedRecord   Rule = "witness-unlogged-record"
	RuleWitnessOffset           Rule = "witness-offset"
	RuleWitnessState            Rule = "witness-state"
	RuleWitnessTableDigest      Rule = "witness-table-digest"
	RuleWitnessInvariant        Rule = "witness-invariant"

	// The witness-only layer beside the white-box verifier
	// (blackboxlayer.go).
	RuleLayersDisagree Rule = "layers-disagree"
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
	{RuleSelectionMissing, "the evidence does not record which scenarios the run selected (run.selection; inconclusive)"},
	{RuleScenarioMissing, "a scenario that run.selection selects is not in the evidence"},
	{RuleScenarioNotSelected, "the evidence has a scenario that run.selection does not select"},
	{RuleBoundaryNotRun, "a boundary whose scenario was not selected or did not run (inconclusive)"},
	{RuleTimeOutsideRun, "the run ends before it starts, or an event's time is outside the run (give or take 2 s)"},
	{RuleSummaryMismatch, "the summary's counts differ from the scenarios listed"},
	{RuleBoundaryMismatch, "the boundary table differs from the one the scenarios give"},
	{RuleProofMismatch, "the proof boundary differs from what this verifier derives: a fault claimed that never fired, one that fired omitted or listed as not run, or a matrix entry worded otherwise than the claims render (names the item)"},
	{RuleSUTMismatch, "the system under test's layers do not follow from its features, or a scenario ran that needs a feature it does not claim"},
	{RuleBuildInfo, "tool.build is not the shape of a Go build stamp (toolchain version, module, a commit id or none), or its revision disagrees with tool.revision"},
	{RuleSourceDigest, "the system under test's source digest is not a sha256 of at least one file of the module's directories (the reference: its packages), or is missing from evidence that records tool.build"},

	{RuleScenarioDuplicate, "a scenario is listed twice"},
	{RuleScenarioMismatch, "a known scenario's suite, boundary or fault points differ from the spec"},
	{RuleScenarioUnknown, "a scenario the verifier does not know: its metrics and status cannot be recomputed (inconclusive)"},
	{RuleScenarioNotRun, "a scenario that did not run (inconclusive)"},
	{RuleScenarioFailed, "the runner reports that the scenario failed"},

	{RuleLogMissing, "a referenced event log does not exist next to the evidence file"},
	{RuleLogPath, "a log is refused by the bundle's gate: a path with .., a backslash or absolute, a symlink anywhere on it, not a regular file (directory, FIFO, device), more than one hard link, larger than 512 MiB or beyond the bundle's byte budget"},
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

	{RuleWitnessMissing, "the evidence has no witness, or says one could not be had: the actors' word is all there is (inconclusive; verify --allow-unwitnessed lists it instead)"},
	{RuleWitnessPath, "a witness file is refused by the bundle's gate: outside the bundle's witness directory, a symlink anywhere on its path, not a regular file, more than one hard link, larger than 128 MiB or beyond the bundle's byte budgets; or a witness directory holds a symlink or a special file"},
	{RuleWitnessFileMissing, "a witness file the evidence lists does not exist (deleted or moved), or a witness lists no file"},
	{RuleWitnessSize, "a witness file's size differs from the one the evidence recorded"},
	{RuleWitnessDigest, "a witness file's sha256 differs from the one the evidence recorded"},
	{RuleWitnessUnlisted, "a witness directory holds a file the evidence does not list"},
	{RuleWitnessDamaged, "the binlog or the broker's directory cannot be read whole: cut short, corrupt, not contiguous"},
	{RuleWitnessServer, "the binlog was written by another server (version, server id) than the evidence names"},
	{RuleWitnessGTID, "the binlog's GTIDs do not run without gap from gtid_start to gtid_end"},
	{RuleWitnessForeign, "the witness holds databases, topics or a marker of another run"},
	{RuleWitnessScenarioUnlisted, "the witness holds a database or topic of this run for a scenario the evidence does not list"},
	{RuleWitnessScenarioAbsent, "a scenario that ran has no database in the binlog, or a topic of it is not in the broker's witness"},
	{RuleWitnessNames, "the evidence names a scenario's database or topic otherwise than the run names them"},
	{RuleWitnessWrite, "a logged seed or outbox write is not a transaction of that one row in the binlog"},
	{RuleWitnessOrderTx, "a committed (or advanced) order is not exactly one binlog transaction of its writes with the logged values and nothing else"},
	{RuleWitnessRollbackWrote, "a request the log calls rolled back has a committed transaction in the binlog"},
	{RuleWitnessAnswer, "a 2xx answer the client recorded names an order the binlog does not hold under its key (and principal), or a body other than the stored answer"},
	{RuleWitnessClaim, "a logged claim is not an outbox row change with its state before and its token and lease after, in a transaction of claims"},
	{RuleWitnessMark, "a mark of 1 row has no CLAIMED -> SENT change under its token in the binlog (or one in a transaction of other writes), or a mark of 0 rows has one"},
	{RuleWitnessColumn, "a column no event names is not what the contract derives from its row and transaction (an intent's payload from its order, an answer from its order, a notification's body from its event, a line's price from its stock, sent_at with SENT, a timestamp on the database clock to the microsecond), or a key the server assigns appears twice"},
	{RuleWitnessClaimWait, "an intent a relay polling in a loop (its claims log poll_ms), alive and idle when the intent was inserted, first claimed later than spec's RelayPoll plus ClaimWaitSlack after the insert, as the binlog stamps both (created_at, changed_at); not judged over a fault, a backlog, an earlier version unsent"},
	{RuleWitnessClaimBatch, "a claim transaction in the binlog took more rows than the batch its relay logged: a round that claims past its bound"},
	{RuleWitnessLeaseClock, "a claim's lease_until in the binlog is not the server's changed_at of that claim plus the lease it logged: a lease not on the database clock"},
	{RuleWitnessLeaseExpired, "a logged lease expiry is not an outbox change that moves lease_until back under the same token (or 0 rows has one)"},
	{RuleWitnessEffectTx, "an effect is not one binlog transaction (of the logged trx_id) of its inbox row and its notification with the logged values"},
	{RuleWitnessRejectWrote, "a duplicate the inbox rejected, or an effect the log says rolled back, has an inbox row or notification in the binlog that no effect explains"},
	{RuleWitnessUnloggedWrite, "a binlog row change of the scenario's database that no logged event explains"},
	{RuleWitnessPublish, "a logged publish has no broker record at its partition and offset, or the record's key, value or headers differ"},
	{RuleWitnessPublishRefused, "a publish the log calls refused has its record in the broker's log"},
	{RuleWitnessReceive, "a logged receive names a broker record that does not exist, or one of another event"},
	{RuleWitnessUnloggedRecord, "a broker record of the scenario's topics that no logged publish explains"},
	{RuleWitnessOffset, "a group's committed offset in the broker is not the last one the logs committed, or no log committed it"},
	{RuleWitnessState, "the binlog's row images do not chain: the end state cannot be rebuilt from it"},
	{RuleWitnessTableDigest, "a table rebuilt from the binlog differs from the live table digest"},
	{RuleWitnessInvariant, "an invariant returns rows on the end state rebuilt from the binlog, or differs from the live result"},

	{RuleLayersDisagree, "the witness-only layer, run under profiles/reference.yaml over the same witnesses, finds worse than the white-box verifier: the verdict is the worse of the two"},
}
