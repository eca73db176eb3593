//go:build jsonbench

package eventline

// The candidates (candidates.go) per line:
//
//	go test -tags jsonbench -run '^$' -bench 'BenchmarkLineDecoders' -benchmem -count 5 ./checks/eventline

import (
	"bytes"
	"os"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
)

// benchLines are the lines of a generated log: every kind the bulk
// generator writes, in its proportions.
func benchLines(b *testing.B) []string {
	dir := b.TempDir()
	evidencetest.WriteBulk(b, dir, evidencetest.Bulk{Orders: 64, Invariants: []string{"orphan-sent"}})
	var lines []string
	for _, a := range []string{"scenario", "orders", "relay-a", "consumer-1"} {
		data, err := os.ReadFile(dir + "/u80/businessInvariants/" + a + ".jsonl")
		if err != nil {
			b.Fatal(err)
		}
		for l := range bytes.Lines(data) {
			lines = append(lines, string(bytes.TrimSuffix(l, []byte("\n"))))
		}
	}
	return lines
}

// BenchmarkLineDecoders: the cost of deciding one valid line, per
// candidate, over the lines of a generated log (ns/op is per line).
func BenchmarkLineDecoders(b *testing.B) {
	lines := benchLines(b)
	for _, c := range Candidates {
		b.Run(c.Name, func(b *testing.B) {
			d := c.New()
			var pe evidence.Decoded
			i := 0
			for b.Loop() {
				pe.Reset()
				if !d.Fast(lines[i], &pe) {
					b.Fatalf("undecided: %s", lines[i])
				}
				if i++; i == len(lines) {
					i = 0
				}
			}
		})
	}
}

// TestLineDecodersAgree: on the generated lines every candidate decodes
// the same event as evidence.DecodeEvent.
func TestLineDecodersAgree(t *testing.T) {
	lines := benchLines(&testing.B{})
	for _, c := range Candidates {
		d := c.New()
		for _, l := range lines {
			var pe evidence.Decoded
			if !d.Fast(l, &pe) {
				t.Fatalf("%s: undecided: %s", c.Name, l)
			}
			assertSameAsSlow(t, l, &pe.Event)
		}
	}
}

// FuzzTextDecoder: the jsontext candidate is sound, as FuzzFastEvent
// checks for the scanner.
func FuzzTextDecoder(f *testing.F) {
	for _, tc := range fastCases {
		f.Add(tc.line)
	}
	d := newTextDecoder()
	f.Fuzz(func(t *testing.T, line string) {
		var pe evidence.Decoded
		if d.Fast(line, &pe) {
			assertSameAsSlow(t, line, &pe.Event)
		}
	})
}
