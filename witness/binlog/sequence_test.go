package binlog

import (
	"io"
	"strings"
	"testing"
)

func TestInSequence(t *testing.T) {
	in := func(names ...string) []Input {
		out := make([]Input, len(names))
		for i, n := range names {
			out[i] = Input{Name: n, R: strings.NewReader(n)}
		}
		return out
	}
	got, err := InSequence(in("binlog.000010", "binlog.000002", "binlog.000009"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range got {
		names = append(names, g.Name)
		b, _ := io.ReadAll(g.R)
		if string(b) != g.Name {
			t.Errorf("input %s carries the reader of %s", g.Name, b)
		}
	}
	if strings.Join(names, " ") != "binlog.000002 binlog.000009 binlog.000010" {
		t.Errorf("order %v", names)
	}
	for _, bad := range [][]string{
		{"binlog.000001", "binlog.000001"},    // two of one name
		{"binlog.000001", "binlog.index"},     // one not in the sequence
		{"binlog.000001", "other-bin.000002"}, // two sequences
		{"binlog.000001", "binlog.0000001"},   // one number twice
	} {
		if _, err := InSequence(in(bad...)); err == nil {
			t.Errorf("InSequence(%v) = nil error", bad)
		}
	}
}
