package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate fails while a committed file generated from the
// spec differs from what the spec generates today, as
// TestCommittedReportUpToDate does for the committed report: the scenario
// tables of docs/scenarios.md, the README's observation lines and count,
// and the planted bugs' constants.
func TestGeneratedUpToDate(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for _, f := range outputs {
		t.Run(f.path, func(t *testing.T) {
			old, want, err := generate(root, f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(old, want) {
				t.Fatalf("%s is not what the spec generates: run go generate ./spec (first difference at line %d)",
					f.path, firstDiffLine(old, want))
			}
		})
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

func TestReplaceBlocks(t *testing.T) {
	blocks := map[string]string{"a": "new\n", "n": "7 things"}
	for _, c := range []struct {
		name, doc, want, err string
	}{
		{"lines and a phrase",
			"x\n<!-- spec:begin a -->\nold\n<!-- spec:end a -->\ny (<!-- spec:begin n -->3 things<!-- spec:end n -->)\n",
			"x\n<!-- spec:begin a -->\nnew\n<!-- spec:end a -->\ny (<!-- spec:begin n -->7 things<!-- spec:end n -->)\n", ""},
		{"a block nothing fills", "<!-- spec:begin a -->\n<!-- spec:end a --><!-- spec:begin b -->x<!-- spec:end b -->", "",
			`block "b" has no generator`},
		{"a marker deleted", "<!-- spec:begin a -->\n<!-- spec:end a -->\n", "", `no block "n"`},
		{"an end marker deleted", "<!-- spec:begin a -->\nold\n<!-- spec:begin n --><!-- spec:end n -->", "", `block "a" has no`},
	} {
		got, err := replaceBlocks([]byte(c.doc), blocks)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: err = %v; want one containing %q", c.name, err, c.err)
		case c.err == "" && (err != nil || string(got) != c.want):
			t.Errorf("%s: replaceBlocks = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"mark-cas-claim-id-only": "MarkCASClaimIDOnly",
		"outbox-outside-tx":      "OutboxOutsideTx",
		"retry-new-event-id":     "RetryNewEventID",
	} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q; want %q", in, got, want)
		}
	}
}
