package runner

import "time"

// DefaultMinTimeout is the shortest per-scenario timeout a scenario
// without one of its own (minTimeouts) is given a chance with: its scratch
// database and migrations alone take tens of milliseconds on an idle
// machine and several times that on a loaded one.
const DefaultMinTimeout = time.Second

// MinTimeout returns the shortest per-scenario timeout the selection
// needs, and the scenario that needs it.
func MinTimeout(selected []Scenario) (time.Duration, string) {
	var (
		min time.Duration
		id  string
	)
	for _, sc := range selected {
		m, ok := minTimeouts[sc.Base()]
		if !ok {
			m = DefaultMinTimeout
		}
		if m > min {
			min, id = m, sc.ID
		}
	}
	return min, id
}

// minTimeouts holds the MinTimeout of the scenarios that need more than
// DefaultMinTimeout, by id (chaos's depends on --duration: checkChaos).
var minTimeouts = map[string]time.Duration{"relayKill9": killMinTimeout}
