package plant_test

import (
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

func TestParse(t *testing.T) {
	if b, err := plant.Parse(""); err != nil || b != plant.None {
		t.Fatalf(`Parse("") = %q, %v`, b, err)
	}
	for _, p := range spec.Plants {
		got, err := plant.Parse(p.Bug)
		if err != nil || string(got) != p.Bug {
			t.Errorf("Parse(%q) = %q, %v", p.Bug, got, err)
		}
	}
	_, err := plant.Parse("typo")
	if err == nil || !strings.Contains(err.Error(), string(plant.MarkWithoutToken)) {
		t.Errorf("Parse(typo) = %v; want an error listing the valid bugs", err)
	}
}
