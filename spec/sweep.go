package spec

// The call sweep: every database statement and broker call of the relay
// and the consumer fails once, each in its own run, in the spirit of
// FoundationDB's BUGGIFY. The sites are the ones a clean run passes
// through the one call hook (runner/fault.Call); a new call is swept
// without a new scenario.
var sweepScenarios = []Scenario{
	{
		ID: "callSweep", Consumes: true, Suite: SuiteSweep, Boundary: BoundaryNone, OptIn: true,
		Faults: []FaultRef{{CallFailed, InjectCall}},
		Description: "every database statement and broker call of the relay and the consumer fails once, each in a run of its own: " +
			"answered with an error before it took effect, its answer lost after it took effect, and on a killed connection; " +
			"the actors recover (retry, replay, lease expiry) and every order ends with one effect",
		Details: "a clean run of two orders (claim, publish, mark, consume) passes the call hook at each site and names it " +
			"(the discovery); then one run of two more orders per site and mode, the site armed to fail once: before (MariaDB " +
			"1213 or Kafka UNKNOWN_SERVER_ERROR, the call not run), after (the call ran, then a lost connection), kill (KILL " +
			"CONNECTION of the scenario database's connections and the statement answered ER_CONNECTION_KILLED, or the " +
			"embedded broker closing the connection of the site's next request, then the request sent). One relay with a 200 ms lease (a claim left behind is taken over when it ran " +
			"out) and one consumer, restarted as a new member of the group when it stops on an error; each run is given 4 s " +
			"to settle. Kill runs of broker sites need the embedded broker",
		Also: "the verifier holds every injection to the record its actor made of the failed call: a refused or unknown publish " +
			"for the relay's publish, a rolled back or unknown effect transaction for the consumer's effect statements, the " +
			"consumer's own call-failed record for its fetch and offset commit, with the outcome the mode implies (answered " +
			"before, unknown after and, at a COMMIT, on a killed connection); a run whose record is missing or misread fails",
		Metrics: []Metric{
			{Name: "sites", Means: "distinct call sites failed (each site the clean run passed, that a run reached)", Example: "18"},
			{Name: "runs", Means: "runs in which the armed call failed (injections at call-failed)", Example: "54"},
			{Name: "modes", Means: "those runs by mode", Example: "before:18/after:18/kill:18"},
			{Name: "late", Accept: "0",
				Means: "intents not SENT when the run that placed them ended (the scenario observes each then)"},
			{Name: "unsettled", Accept: "0",
				Means: "outbox intents that at the end are not SENT or do not have exactly one effect"},
			{Name: "lag", Accept: "0", Means: "the group's committed offset short of the topic's end, at the end"},
		},
		Needs: []Feature{FeatureOrderService, FeatureFaultHooks, FeatureStepwiseRelay},
	},
}
