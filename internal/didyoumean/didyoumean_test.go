package didyoumean

import "testing"

func TestSuggest(t *testing.T) {
	cands := []string{"run", "verify", "report", "audit", "explore", "normalChain", "scenarios", "seeds"}
	for _, c := range []struct{ in, want string }{
		{"verfy", "verify"},            // one deletion
		{"normalchain", "normalChain"}, // case only
		{"NORMALCHAIN", "normalChain"},
		{"scenario", "scenarios"}, // the flag a user types
		{"rpeort", "report"},      // a transposition: distance 2 of 6
		{"xyz", ""},               // nothing close
		{"run", ""},               // itself is no suggestion
		{"seed", "seeds"},
		{"normalChian", "normalChain"},
		{"nrmlChn", ""}, // distance 4 > 3
	} {
		if got := Suggest(c.in, cands); got != c.want {
			t.Errorf("Suggest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if h := Hint("verfy", cands); h != " (did you mean verify?)" {
		t.Errorf("Hint = %q", h)
	}
	if h := Hint("zzzzzz", cands); h != "" {
		t.Errorf("Hint = %q", h)
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"abc", "abc", 0}, {"ab", "ba", 2}} {
		if got := distance(c.a, c.b); got != c.d {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
