//go:build jsonbench

package eventline

// The decoders of event lines compared side by side (BENCHMARKS.md,
// "Decoding: the hand-written scanner against the libraries"), per line
// here (candidates_test.go) and end to end in checks
// (decodebench_test.go, BenchmarkVerify1MDecoders), which is why they are
// exported. Behind the jsonbench build tag: the library decoders are
// candidates, not the verifier's, and github.com/go-json-experiment/json
// is required by go.mod only for them.

import (
	"bytes"
	"errors"
	"io"
	"time"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Candidate is a decoder of event lines measured against the verifier's.
type Candidate struct {
	Name string
	New  func() evidence.Decoder
}

// Candidates are the candidates, each an evidence.Decoder whose Full is
// the verifier's full validator.
var Candidates = []Candidate{
	// (a) the hand-written scanner, the compiled rules, fill (the verifier's).
	{"scanner", func() evidence.Decoder { return NewDecoder() }},
	// (b) encoding/json (evidence.DecodeEvent) and the compiled rules on
	// the decoded struct.
	{"encoding-json", func() evidence.Decoder { return &structDecoder{Decoder: NewDecoder(), v1: true} }},
	// (c) go-json-experiment's Unmarshal (unknown members rejected) and
	// the compiled rules on the decoded struct.
	{"json-experiment", func() evidence.Decoder { return &structDecoder{Decoder: NewDecoder()} }},
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
	*Decoder
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
	*Decoder
	r   bytes.Reader
	dec *jsontext.Decoder
}

func newTextDecoder() *textDecoder {
	return &textDecoder{Decoder: NewDecoder(), dec: jsontext.NewDecoder(bytes.NewReader(nil))}
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
