package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// TestSelection: the evidence's selection is written from the options,
// trimmed and without repeats, with the chaos settings (defaults filled)
// only when chaos was selected.
func TestSelection(t *testing.T) {
	s := selection(&Options{Seed: 3, Scenarios: []string{" normalChain", "offsetReplay", "normalChain", ""}, Plant: "no-inbox-dedupe"})
	if !slices.Equal(s.Scenarios, []string{"normalChain", "offsetReplay"}) || s.Plant != "no-inbox-dedupe" || s.Chaos != nil {
		t.Fatalf("selection = %+v", s)
	}
	if s := selection(&Options{Seed: 1}); s.Scenarios == nil || len(s.Scenarios) != 0 || s.Plant != "" || s.Chaos != nil {
		t.Fatalf("default selection = %+v; want no scenarios (every default one), no plant, no chaos", s)
	}
	o := &Options{Seed: 9, Scenarios: []string{"chaos"}, Chaos: nemesis.Config{Duration: 2 * time.Second, Relays: 3,
		Kinds: []nemesis.Kind{nemesis.Kinds[0]}, Only: nemesis.NoFaults}}
	c := selection(o).Chaos
	if c == nil || c.Seed != 9 || c.Duration != "2s" || c.Relays != 3 || c.Orders != nemesis.DefaultOrders ||
		c.Consumers != nemesis.DefaultConsumers || c.Users != nemesis.DefaultUsers ||
		!slices.Equal(c.Faults, []string{string(nemesis.Kinds[0])}) || !slices.Equal(c.OnlyFaults, []int{0}) || c.Planned {
		t.Fatalf("chaos selection = %+v", c)
	}
	o.Chaos.Plan = []nemesis.Fault{{}}
	if c := selection(o).Chaos; !c.Planned {
		t.Fatalf("a planned schedule is not recorded as planned: %+v", c)
	}
}
