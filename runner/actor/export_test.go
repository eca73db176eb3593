package actor

// ArmStopsOnSignal and ParseStopAt are for the tests of package actor_test.
var (
	ArmStopsOnSignal = armStopsOnSignal
	ParseStopAt      = parseStopAt
)
