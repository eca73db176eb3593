package runner

import (
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// selection is what the run was asked to do, recorded in the evidence
// (evidence.Selection) from the options themselves: the verifier reads
// these fields and never parses the command line back.
func selection(o *Options) *evidence.Selection {
	s := &evidence.Selection{Scenarios: []string{}, Plant: string(o.Plant)}
	for _, id := range o.Scenarios {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(s.Scenarios, id) {
			s.Scenarios = append(s.Scenarios, id)
		}
	}
	if o.ConsumerMode != "" && o.ConsumerMode != spec.SelectRecord {
		s.ConsumerMode = o.ConsumerMode
	}
	if !slices.ContainsFunc(s.Scenarios, func(id string) bool { base, _ := spec.BaseID(id); return base == "chaos" }) {
		return s
	}
	c := o.chaosConfig()
	kinds := make([]string, len(c.Kinds))
	for i, k := range c.Kinds {
		kinds[i] = string(k)
	}
	s.Chaos = &evidence.ChaosSelection{
		Seed: c.Seed, Duration: c.Duration.String(), Orders: c.Orders, Relays: c.Relays,
		Consumers: c.Consumers, Users: c.Users, GenRounds: c.GenRounds, Faults: kinds, OnlyFaults: slices.Clone(c.Only),
		Planned: len(c.Plan) > 0,
	}
	if c.Inboxes > 1 {
		s.Chaos.Inboxes = c.Inboxes
	}
	return s
}
