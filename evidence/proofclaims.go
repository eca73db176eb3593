package evidence

import (
	"fmt"
	"strings"
)

// ProofClaims are what the runner says the run did, as far as the
// proof-boundary matrix rests on it: for every scenario that ran, each
// fault point it declares, how often that fault fired and was skipped,
// and which actors it killed.
type ProofClaims struct {
	Faults []FaultClaim `json:"faults"`
}

// FaultClaim is what one fault point of one scenario did.
type FaultClaim struct {
	Scenario string `json:"scenario"`
	Point    string `json:"point"`
	// Fired is how many times the fault was injected: its injection is in
	// the logs and, where a witness can show it, in the witness.
	Fired int `json:"fired"`
	// Skipped is how many times the chaos schedule drew it and it found
	// nothing to hit (no process in the slot, no open transaction).
	Skipped int `json:"skipped"`
	// Missed is how many of the fired faults of an aimed kind (pause,
	// conn-kill) missed their aim and struck wherever the process was.
	Missed int `json:"missed"`
	// Killed are the actors (spec.ActorOrders, ActorRelay, ActorConsumer)
	// whose OS process the fault ended with SIGKILL, as the process
	// record shows; sorted, never nil.
	Killed []string `json:"killed"`
}

// Claim returns the claim of scenario's point, and whether there is one.
func (c *ProofClaims) Claim(scenario, point string) (FaultClaim, bool) {
	if c == nil {
		return FaultClaim{}, false
	}
	for _, f := range c.Faults {
		if f.Scenario == scenario && f.Point == point {
			return f, true
		}
	}
	return FaultClaim{}, false
}

// ClaimedItem names a claim for a reader: "nemesis-kill in chaos".
func (f FaultClaim) ClaimedItem() string { return f.Point + " in " + f.Scenario }

// String says what a claim claims, for a reason's claimed and
// recomputed fields.
func (f FaultClaim) String() string {
	s := fmt.Sprintf("fired %d, skipped %d", f.Fired, f.Skipped)
	if f.Missed > 0 {
		s += fmt.Sprintf(", missed its aim %d", f.Missed)
	}
	if len(f.Killed) > 0 {
		s += ", killed the " + strings.Join(f.Killed, ", the ")
	}
	return s
}

// Ran returns the claims of the scenarios scs lists as run: what is left
// of them once a bundle's scenarios were edited (nil stays nil).
func (c *ProofClaims) Ran(scs []Scenario) *ProofClaims {
	if c == nil {
		return nil
	}
	ran := map[string]bool{}
	for _, sc := range scs {
		if sc.Status != StatusNotRun {
			ran[sc.ID] = true
		}
	}
	out := &ProofClaims{Faults: []FaultClaim{}}
	for _, f := range c.Faults {
		if ran[f.Scenario] {
			out.Faults = append(out.Faults, f)
		}
	}
	return out
}
