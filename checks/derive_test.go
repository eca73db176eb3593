package checks

import (
	"slices"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// TestEveryScenarioDerived: every scenario of the spec has a derivation,
// every derivation a scenario, and a derivation yields the spec's metrics in
// line order (on an empty replay, where each is unknown or zero).
func TestEveryScenarioDerived(t *testing.T) {
	for _, s := range spec.All() {
		d, ok := derivations[s.ID]
		if !ok {
			t.Errorf("scenario %s of the spec has no derivation (add it to the derivations table of checks/derive_<topic>.go)", s.ID)
			continue
		}
		var got []string
		for _, m := range d.metrics(facts{m: model.New(nil, nil)}) {
			got = append(got, m.name)
		}
		if want := s.MetricNames(); !slices.Equal(got, want) {
			t.Errorf("%s: the derivation yields %v; the spec's metrics are %v", s.ID, got, want)
		}
	}
	for id := range derivations {
		if _, ok := spec.Lookup(id); !ok {
			t.Errorf("derivation %s has no scenario in the spec", id)
		}
	}
}
