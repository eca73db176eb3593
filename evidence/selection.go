package evidence

// Selection is what a run was asked to do, written by the runner from its
// options (not from its command line): which scenarios, which planted
// bug, and how the chaos scenario was configured. The verifier compares
// it with the scenarios the evidence holds, so that a scenario deleted
// from the evidence, or one added to it, cannot go unnoticed. Run.Args
// stays beside it for display and for replaying the run by hand; nothing
// is parsed back from it.
type Selection struct {
	// Scenarios are the ids the run selected, in the order given and
	// without repeats; empty for the default run, which selects every
	// scenario that is not opt-in (spec.DefaultIDs).
	Scenarios []string `json:"scenarios"`
	// Plant is the bug planted into the system under test; empty for a
	// clean run. Run.Planted labels the run with the same name.
	Plant string `json:"plant,omitempty"`
	// ConsumerMode is `run --consumer-mode` (spec.SelectBatch or
	// spec.SelectBoth); empty for the per-record consumer alone. The
	// consumer scenarios run as their batch variants (spec.BatchID) in
	// batch, and also in both.
	ConsumerMode string `json:"consumer_mode,omitempty"`
	// Chaos is the chaos scenario's configuration; present only when the
	// chaos scenario was selected.
	Chaos *ChaosSelection `json:"chaos,omitempty"`
}

// ChaosSelection is the configuration of the chaos scenario: its load,
// its actors and the faults its nemesis may draw, with the defaults
// filled in (runner/nemesis.Config).
type ChaosSelection struct {
	Seed      int64  `json:"seed"`
	Duration  string `json:"duration"`
	Orders    int    `json:"orders"`
	Relays    int    `json:"relays"`
	Consumers int    `json:"consumers"`
	Users     int    `json:"users"`
	// Inboxes is the number of consumer groups, each of Consumers
	// members and its own inbox consumer name (spec.ChaosInboxes); absent
	// for one, the notifier.
	Inboxes int `json:"inboxes,omitempty"`
	// GenRounds is the size of the generated load that ran beside the
	// orders: rounds of one request of each of its users (absent in
	// evidence of versions without it).
	GenRounds int `json:"gen_rounds,omitempty"`
	// Faults are the fault kinds the nemesis may draw.
	Faults []string `json:"faults"`
	// OnlyFaults keeps the faults of the seed's schedule with these
	// 1-based numbers (shrinking); [0] keeps none; empty keeps all.
	OnlyFaults []int `json:"only_faults,omitempty"`
	// Planned is true when the schedule was given as a plan, not drawn
	// from the seed: such a run cannot be replayed from flags.
	Planned bool `json:"planned,omitempty"`
}
