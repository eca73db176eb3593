package spec

import (
	"slices"
	"testing"
)

func ids(scs []Scenario) []string {
	out := make([]string, len(scs))
	for i, s := range scs {
		out[i] = s.ID
	}
	return out
}

func TestConsumerModes(t *testing.T) {
	sel, err := Select([]string{"placement", "offsetReplay", "effectDbError"})
	if err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[string][]string{
		"":           {"placement", "offsetReplay", "effectDbError"},
		SelectRecord: {"placement", "offsetReplay", "effectDbError"},
		SelectBatch:  {"placement", "offsetReplay-batch", "effectDbError-batch"},
		SelectBoth:   {"placement", "offsetReplay", "offsetReplay-batch", "effectDbError", "effectDbError-batch"},
	} {
		if got := ids(WithModes(sel, mode)); !slices.Equal(got, want) {
			t.Errorf("mode %q: %v, want %v", mode, got, want)
		}
	}
	if err := CheckConsumerMode("batched"); err == nil {
		t.Error("CheckConsumerMode(batched): no error")
	}
	// A variant is selected by its id, once, and looked up as itself.
	sel, err = Select([]string{"effectDbError-batch"})
	if err != nil || !slices.Equal(ids(WithModes(sel, SelectBoth)), []string{"effectDbError-batch"}) {
		t.Errorf("Select(effectDbError-batch) in both: %v, %v", ids(sel), err)
	}
	v, ok := Lookup("effectDbError-batch")
	if !ok || v.Mode() != ModeBatch || v.Base() != "effectDbError" || v.Accept("replays") != "5" || v.Design != nil {
		t.Errorf("Lookup(effectDbError-batch) = %v %q %q replays=%q", ok, v.Mode(), v.Base(), v.Accept("replays"))
	}
	if s, _ := Lookup("effectDbError"); s.Mode() != ModeRecord || s.Accept("replays") != "2" {
		t.Errorf("effectDbError: mode %q replays=%q", s.Mode(), s.Accept("replays"))
	}
	if s, _ := Lookup("offsetReplay-batch"); s.Design != nil {
		t.Error("a batch variant carries the boundary table's row")
	}
	for _, id := range []string{"placement-batch", "nonsense-batch"} {
		if _, ok := Lookup(id); ok {
			t.Errorf("Lookup(%s): a scenario without a consumer has no batch variant", id)
		}
	}
	if _, err := Select([]string{"placement-batch"}); err == nil {
		t.Error("Select(placement-batch): no error")
	}
}
