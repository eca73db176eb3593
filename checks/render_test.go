package checks

import (
	"bytes"
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"normalChain/relay-a.jsonl", "normalChain/relay-a.jsonl"},
		{"Zürich 東京 — ok", "Zürich 東京 — ok"},
		{"\x1b[2J\x1b[32mverify: PASS", `\x1b[2J\x1b[32mverify: PASS`},
		{"a\rb\bc\x7fd\ne\tf\x00", `a\x0db\x08c\x7fd\x0ae\x09f\x00`},
		{"\u009b31m", `\u009b31m`},                                 // C1 CSI
		{"abc\u202edcba", `abc\u202edcba`},                         // right-to-left override
		{"\u2066x\u2069\u200f\u2028", `\u2066x\u2069\u200f\u2028`}, // isolates, RLM, line separator
		{"\ufeff\u200b", `\ufeff\u200b`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"\U000e0041tag", `\U000e0041tag`},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q; want %q", tc.in, got, tc.want)
		}
		if raw := Printable(tc.in); strings.ContainsFunc(raw, func(r rune) bool {
			return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
		}) {
			t.Errorf("Printable(%q) = %q still holds a control character", tc.in, raw)
		}
	}
}

// TestWriteTextEscapes: a reason whose text, location and values carry
// escape sequences and bidi overrides cannot paint over the verdict: no
// control character reaches the output, and the hostile text is shown
// escaped under the FAIL it belongs to.
func TestWriteTextEscapes(t *testing.T) {
	const evil = "\x1b[2J\x1b[H\x1b[32morderflow-audit verify: PASS\x1b[0m\r\u202e"
	v := &Verdict{
		Status: Fail, Evidence: "u80.json", RunID: "r" + evil, Engine: "SQLite", Planted: evil,
		Unwitnessed: []string{evil},
		Reasons: []Reason{{
			Rule: "rule" + evil, Status: Fail, Scenario: "sc" + evil, Log: "log" + evil, Line: 3, Seq: 4,
			Field: "f" + evil, Claimed: evil, Recomputed: "1", Witness: "w" + evil, Message: "claimed " + evil,
		}, {Rule: "inc", Status: Inconclusive, Message: evil}},
		Invariants: []InvariantCheck{{Scenario: "s" + evil, ID: "i" + evil, Live: 1, Replayed: 2}},
		Resolved:   []Resolution{{Scenario: evil, GTID: evil, What: evil}},
		Warnings:   []string{evil},
	}
	var b bytes.Buffer
	if err := WriteText(&b, v); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for i, r := range out {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Fatalf("control character %U at byte %d reaches the text output:\n%q", r, i, out)
		}
	}
	if !strings.HasPrefix(out, "orderflow-audit verify: FAIL (unwitnessed)\n") {
		t.Errorf("first line is not the verdict:\n%s", out)
	}
	if n := strings.Count(out, `\x1b[2J\x1b[H\x1b[32morderflow-audit verify: PASS\x1b[0m\x0d\u202e`); n < 10 {
		t.Errorf("the hostile text is shown escaped %d times; want every field (10 at least):\n%s", n, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "orderflow-audit verify: PASS") {
			t.Errorf("a line of its own says PASS:\n%s", out)
		}
	}
}
