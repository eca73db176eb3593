package plant_test

import (
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
)

func TestParse(t *testing.T) {
	if b, err := plant.Parse(""); err != nil || b != plant.None {
		t.Fatalf(`Parse("") = %q, %v`, b, err)
	}
	for _, b := range plant.All {
		got, err := plant.Parse(string(b.Bug))
		if err != nil || got != b.Bug {
			t.Errorf("Parse(%q) = %q, %v", b.Bug, got, err)
		}
	}
	_, err := plant.Parse("typo")
	if err == nil || !strings.Contains(err.Error(), string(plant.MarkWithoutToken)) {
		t.Errorf("Parse(typo) = %v; want an error listing the valid bugs", err)
	}
}
