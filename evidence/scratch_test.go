package evidence

import (
	"strings"
	"testing"
)

func TestScratchName(t *testing.T) {
	cases := []struct {
		parts []string
		want  string
	}{
		{[]string{"20261204T101010-AB12", "u80.normalChain"}, "ofa_20261204t101010_ab12_u80_normalchain"},
		{[]string{"r`; DROP", "x"}, "ofa_rdrop_x"},
		{nil, "ofa"},
		{[]string{strings.Repeat("a", 100)}, "ofa_" + strings.Repeat("a", 60)},
		{[]string{strings.Repeat("a", 60)}, "ofa_" + strings.Repeat("a", 60)},
	}
	for _, c := range cases {
		if got := ScratchName(c.parts...); got != c.want {
			t.Errorf("ScratchName(%q) = %q, want %q", c.parts, got, c.want)
		}
	}
}
