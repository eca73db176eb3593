//go:build jsonbench

package checks

// The decoders of event lines compared side by side, per line and end to
// end (BENCHMARKS.md, "Decoding: the hand-written scanner against the
// libraries"). Behind the jsonbench build tag: the library decoders here
// are candidates, not the verifier's, and github.com/go-json-experiment/json
// is required by go.mod only for them.
//
//	go test -tags jsonbench -run '^$' -bench 'BenchmarkLineDecoders' -benchmem -count 5 ./checks
//	OFA_BULK_DIR=/tmp/bulk1m go test -count=1 -run TestWriteBulkEvidence ./checks
//	for i in 1 2 3 4 5; do OFA_BULK_DIR=/tmp/bulk1m go test -tags jsonbench -run '^$' \
//	    -bench 'BenchmarkVerify1MDecoders' -benchtime 1x -count 1 ./checks; done

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
)

// benchDecoders are the candidates, each an evidence.Decoder whose Full is
// the verifier's full validator.
var benchDecoders = []struct {
	name string
	new  func() evidence.Decoder
}{
	// (a) the hand-written scanner, the compiled rules, fill (the verifier's).
	{"scanner", func() evidence.Decoder { return newFastDecoder() }},
	// (b) encoding/json (evidence.DecodeEvent) and the compiled rules on
	// the decoded struct.
	{"encoding-json", func() evidence.Decoder { return &structDecoder{fastDecoder: newFastDecoder(), v1: true} }},
	// (c) go-json-experiment's Unmarshal (unknown members rejected) and
	// the compiled rules on the decoded struct.
	{"json-experiment", func() evidence.Decoder { return &structDecoder{fastDecoder: newFastDecoder()} }},
	// (d) go-json-experiment's jsontext tokenizer in place of the
	// hand-written scanner, the same compiled rules and fill.
	{"jsontext", func() evidence.Decoder { return newTextDecoder() }},
}

// structDecoder decodes a line with a library into evidence.Event and then
// applies the compiled rules to the struct. Presence is read from the
// struct (a zero value counts as absent), which the
// library does not report: so it is NOT sound (`"event_id":""` passes
// where the schema's minLength rejects it); it is here for its cost.
type structDecoder struct {
	*fastDecoder
	v1 bool
}

func (d *structDecoder) Fast(line string, pe *evidence.Decoded) bool {
	raw := unsafe.Slice(unsafe.StringData(line), len(line))
	if d.v1 {
		e, err := evidence.DecodeEvent(raw)
		if err != nil {
			return false
		}
		pe.Event = e
	} else if err := jsonv2.Unmarshal(raw, &pe.Event, jsonv2.RejectUnknownMembers(true)); err != nil {
		return false
	}
	return d.validate(d.structValues(&pe.Event))
}

// structValues loads the values of e's non-zero fields for validate.
func (d *structDecoder) structValues(e *evidence.Event) (present uint64) {
	// A library parsed the times already: any valid one stands for them.
	const aTime = "2026-01-01T00:00:00Z"
	for f, fi := range eventFields {
		v := &d.vals[f]
		p := fi.ptr(e)
		has := true
		switch fi.kind {
		case gkInt64:
			v.tok, v.n = tokInt, *(*int64)(p)
			has = v.n != 0
		case gkInt:
			v.tok, v.n = tokInt, int64(*(*int)(p))
			has = v.n != 0
		case gkInt64Ptr:
			q := *(**int64)(p)
			if has = q != nil; has {
				v.tok, v.n = tokInt, *q
			}
		case gkInt32Ptr:
			q := *(**int32)(p)
			if has = q != nil; has {
				v.tok, v.n = tokInt, int64(*q)
			}
		case gkString:
			s := *(*string)(p)
			if has = s != ""; has {
				v.tok, v.s = tokString, s
			}
		case gkTime:
			v.tok, v.s = tokString, aTime
		case gkTimePtr:
			if has = *(**time.Time)(p) != nil; has {
				v.tok, v.s = tokString, aTime
			}
		case gkStrings:
			ss := *(*[]string)(p)
			if has = ss != nil; has {
				v.tok, v.arr = tokArray, ss
			}
		}
		if has {
			present |= 1 << f
		}
	}
	return present
}

// textDecoder reads the line with jsontext (a strict JSON tokenizer:
// grammar, UTF-8, escapes, duplicate names) into the fast decoder's values
// and then validates and fills like the scanner. A sound design: what it
// cannot decide (a number with a fraction, an escaped key, any other
// shape) stays undecided.
type textDecoder struct {
	*fastDecoder
	r   bytes.Reader
	dec *jsontext.Decoder
}

func newTextDecoder() *textDecoder {
	return &textDecoder{fastDecoder: newFastDecoder(), dec: jsontext.NewDecoder(bytes.NewReader(nil))}
}

func (d *textDecoder) Fast(line string, pe *evidence.Decoded) bool {
	if d.rules == nil {
		return false
	}
	present, ok := d.tokens(line)
	if !ok || !d.validate(present) {
		return false
	}
	return d.fill(present, pe)
}

func (d *textDecoder) tokens(line string) (present uint64, ok bool) {
	d.r.Reset(unsafe.Slice(unsafe.StringData(line), len(line)))
	d.dec.Reset(&d.r)
	if tok, err := d.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return 0, false
	}
	for d.dec.PeekKind() != '}' {
		key, err := d.dec.ReadValue()
		if err != nil || bytes.IndexByte(key, '\\') >= 0 {
			return 0, false
		}
		f, known := fieldByName(unsafe.String(unsafe.SliceData(key[1:]), len(key)-2))
		if !known || present&(1<<f) != 0 {
			return 0, false
		}
		v := &d.vals[f]
		switch d.dec.PeekKind() {
		case '"':
			v.tok = tokString
			v.s, ok = d.str(line)
		case '0':
			v.tok = tokInt
			v.n, ok = d.integer()
		case '[':
			v.tok = tokArray
			v.arr, ok = d.strs(line, v.arr[:0])
		default:
			return 0, false
		}
		if !ok {
			return 0, false
		}
		present |= 1 << f
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return 0, false
	}
	if _, err := d.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return 0, false // trailing data
	}
	return present, present != 0
}

// str reads a string value: a substring of line when it has no escapes.
func (d *textDecoder) str(line string) (string, bool) {
	raw, err := d.dec.ReadValue()
	if err != nil {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		end := int(d.dec.InputOffset())
		return line[end-len(raw)+1 : end-1], true
	}
	b, err := jsontext.AppendUnquote(nil, raw)
	return string(b), err == nil
}

// integer reads -?(0|[1-9][0-9]*) that fits an int64.
func (d *textDecoder) integer() (int64, bool) {
	raw, err := d.dec.ReadValue()
	if err != nil || bytes.ContainsAny(raw, ".eE") {
		return 0, false
	}
	n, _, ok := scanInt(unsafe.String(unsafe.SliceData(raw), len(raw)), 0)
	return n, ok
}

func (d *textDecoder) strs(line string, buf []string) ([]string, bool) {
	if _, err := d.dec.ReadToken(); err != nil {
		return nil, false
	}
	for d.dec.PeekKind() == '"' {
		s, ok := d.str(line)
		if !ok {
			return nil, false
		}
		buf = append(buf, s)
	}
	if tok, err := d.dec.ReadToken(); err != nil || tok.Kind() != ']' {
		return nil, false
	}
	return buf, true
}

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
	for _, c := range benchDecoders {
		b.Run(c.name, func(b *testing.B) {
			d := c.new()
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
	for _, c := range benchDecoders {
		d := c.new()
		for _, l := range lines {
			var pe evidence.Decoded
			if !d.Fast(l, &pe) {
				t.Fatalf("%s: undecided: %s", c.name, l)
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

// BenchmarkVerify1MDecoders: BenchmarkVerify1M with each candidate as the
// verifier's decoder, on one generated file: the one TestWriteBulkEvidence
// wrote into $OFA_BULK_DIR if it is set (so that runs of separate
// processes, interleaved, share it), else a new one.
func BenchmarkVerify1MDecoders(b *testing.B) {
	const orders = (1_000_000 - 8) / 8
	path, events := filepath.Join(os.Getenv("OFA_BULK_DIR"), "u80.json"), int64(8*orders+8)
	if _, err := os.Stat(path); os.Getenv("OFA_BULK_DIR") == "" || err != nil {
		path, events = bulkEvidence(b, b.TempDir(), orders)
	}
	defer func(old func() evidence.Decoder) { newLineDecoder = old }(newLineDecoder)
	for _, c := range benchDecoders {
		b.Run(c.name, func(b *testing.B) {
			newLineDecoder = c.new
			evidencetest.ResetPeakRSS()
			var v *Verdict
			for b.Loop() {
				var err error
				if v, err = Verify(b.Context(), path, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			if v.Events != events || !bulkReasonsOK(v) {
				b.Fatalf("verdict over %d events with reasons %+v", v.Events, v.Reasons)
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(evidencetest.PeakRSS())/(1<<20), "peak-MB")
		})
	}
}
