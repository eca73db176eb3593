package checks

// Fast, schema-exact decoding of event lines: the decoder (this file),
// the schema-rule compiler (eventrules.go), the JSON scanner
// (eventscan.go), the date-time parser (eventtime.go) and the table of
// evidence.Event's fields, derived from its struct tags (eventfields.go).
//
// Full JSON Schema validation of one event line with the generic validator
// costs about 165 µs (the 19 if/then branches of the event schema build an
// error tree for every line): 6,000 lines/s, far from the 200,000 events/s
// a million-event log needs. Decoding with encoding/json costs another
// 4 µs. So every line goes through a fast path first, and through the full
// validator only when the fast path cannot decide:
//
//   - The fast path's constraints are not written by hand: compileEventRules
//     derives them from the embedded schemas/event.schema.json (types,
//     minimum/maximum, minLength/maxLength, pattern, format date-time, enum,
//     const, items, maxItems, required, additionalProperties false, and the
//     allOf if-kind-then-required/oneOf rules). A keyword it does not know
//     disables the fast path altogether (every line then takes the full
//     validator), so the schema can grow without the fast path silently
//     accepting less strictly.
//   - It accepts only a subset of JSON whose meaning is unambiguous: one
//     flat object, keys without escapes and without duplicates, integers
//     without fraction or exponent that fit the Go field, strings that are
//     valid UTF-8 with simple escapes, date-times in the strict form
//     YYYY-MM-DDTHH:MM:SS[.fraction]Z. Anything else returns "undecided".
//   - It is sound by construction: it answers "valid" only when every
//     constraint holds; it never answers "invalid". An undecided line goes
//     to schemas.ValidateEventJSON (which reports every problem with its
//     location) and, if valid, evidence.DecodeEvent.
//
// FuzzFastEvent checks the property that matters: whenever the fast path
// accepts a line, the full validator accepts it too and evidence.DecodeEvent
// yields the identical Event.

import (
	"errors"
	"math"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// fastDecoder decodes lines on one goroutine; it is not safe for
// concurrent use (it caches pattern matches).
type fastDecoder struct {
	rules *eventRules
	vals  [maxEventFields]lineValue
	pats  [maxEventFields]map[string]struct{}
}

func newFastDecoder() *fastDecoder { return &fastDecoder{rules: fastRules} }

const patCacheMax = 512

// Fast fills pe from line and reports whether the fast path decided the
// line is valid. false means undecided: use Full, the full validator.
func (d *fastDecoder) Fast(line string, pe *evidence.Decoded) bool {
	if d.rules == nil {
		return false
	}
	present, ok := d.scan(line)
	if !ok || !d.validate(present) {
		return false
	}
	return d.fill(present, pe)
}

// validate applies the compiled schema to the scanned values.
func (d *fastDecoder) validate(present uint64) bool {
	r := d.rules
	if present&r.required != r.required {
		return false
	}
	for m := present; m != 0; m &= m - 1 {
		f := eventField(bits.TrailingZeros64(m))
		p := r.props[f]
		if p == nil || !d.check(f, p, &d.vals[f]) {
			return false
		}
	}
	for i := range r.conds {
		c := &r.conds[i]
		if present&(1<<c.field) != 0 {
			v := &d.vals[c.field]
			if v.tok != tokString || v.s != c.value {
				continue
			}
		}
		if present&c.required != c.required {
			return false
		}
		if c.oneOf != nil {
			n := 0
			for _, alt := range c.oneOf {
				if present&alt == alt {
					n++
				}
			}
			if n != 1 {
				return false
			}
		}
	}
	return true
}

func (d *fastDecoder) check(f eventField, p *propRule, v *lineValue) bool {
	switch p.typ {
	case "integer":
		if v.tok != tokInt || (p.hasMin && v.n < p.min) || (p.hasMax && v.n > p.max) {
			return false
		}
		return true
	case "array":
		if v.tok != tokArray || (p.minItems >= 0 && len(v.arr) < p.minItems) || (p.maxItems >= 0 && len(v.arr) > p.maxItems) {
			return false
		}
		for _, s := range v.arr {
			if !d.checkString(f, p.items, s) {
				return false
			}
		}
		return true
	default: // "string" or an enum/const of strings
		return v.tok == tokString && d.checkString(f, p, v.s)
	}
}

func (d *fastDecoder) checkString(f eventField, p *propRule, s string) bool {
	if p.minLen >= 0 || p.maxLen >= 0 {
		n := utf8.RuneCountInString(s)
		if (p.minLen >= 0 && n < p.minLen) || (p.maxLen >= 0 && n > p.maxLen) {
			return false
		}
	}
	if p.konst != nil && s != *p.konst {
		return false
	}
	if p.enum != nil {
		found := false
		for _, e := range p.enum {
			if e == s {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if p.dateTime {
		if _, ok := parseStrictTime(s); !ok {
			return false
		}
	}
	if p.pattern != nil {
		cache := d.pats[f]
		if _, hit := cache[s]; hit {
			return true
		}
		if !p.pattern.MatchString(s) {
			return false
		}
		if cache == nil || len(cache) >= patCacheMax {
			cache = make(map[string]struct{}, 16)
			d.pats[f] = cache
		}
		cache[strings.Clone(s)] = struct{}{}
	}
	return true
}

// fill stores the validated values into pe, which is empty. Strings of
// an enum are stored as the schema's own copy, so that the events the
// model keeps do not hold on to the batch's text.
func (d *fastDecoder) fill(present uint64, pe *evidence.Decoded) bool {
	e := &pe.Event
	for m := present; m != 0; m &= m - 1 {
		f := eventField(bits.TrailingZeros64(m))
		fi, v := &eventFields[f], &d.vals[f]
		switch fi.kind {
		case gkInt64:
			fi.setInt64(e, v.n)
		case gkInt64Ptr:
			fi.setInt64Ptr(e, pe.Box(v.n))
		case gkInt32Ptr:
			if v.n < math.MinInt32 || v.n > math.MaxInt32 {
				return false // encoding/json refuses it: let it say so
			}
			fi.setInt32Ptr(e, pe.Box32(int32(v.n)))
		case gkInt:
			fi.setInt(e, int(v.n))
		case gkString:
			fi.setString(e, interned(d.rules.props[f], v.s))
		case gkTime, gkTimePtr:
			t, ok := parseStrictTime(v.s)
			if !ok {
				return false
			}
			if fi.kind == gkTime {
				fi.setTime(e, t)
			} else {
				fi.setTimePtr(e, pe.BoxTime(t))
			}
		case gkStrings:
			ss := make([]string, len(v.arr))
			for i, s := range v.arr {
				ss[i] = interned(d.rules.props[f].items, s)
			}
			fi.setStrings(e, ss)
		default:
			return false
		}
	}
	return true
}

// interned returns the enum's own copy of s, when p is an enum holding s.
func interned(p *propRule, s string) string {
	if p != nil {
		for _, x := range p.enum {
			if x == s {
				return x
			}
		}
	}
	return s
}

func internState(s string) string {
	switch s {
	case evidence.StatePending:
		return evidence.StatePending
	case evidence.StateClaimed:
		return evidence.StateClaimed
	case evidence.StateSent:
		return evidence.StateSent
	}
	return s
}

// lineProblem is why a line is not a valid event.
type lineProblem struct {
	schema []schemas.Problem // schema violations, every one with its location
	decode string            // valid against the schema but not decodable
}

func (p *lineProblem) Error() string { return p.String() }

func (p *lineProblem) String() string {
	if p.decode != "" {
		return p.decode
	}
	parts := make([]string, len(p.schema))
	for i, q := range p.schema {
		parts[i] = q.String()
	}
	return strings.Join(parts, "; ")
}

// decodeLine decodes one event line: the fast path, else the full
// validator and the strict decoder. A nil problem means pe holds the event.
func (d *fastDecoder) decodeLine(line string, pe *evidence.Decoded) *lineProblem {
	pe.Reset()
	if d.Fast(line, pe) {
		return nil
	}
	pe.Reset()
	return slowDecode([]byte(line), pe)
}

// Full validates line against the event schema with every problem named
// and decodes it strictly: a *lineProblem when it is not a valid event.
func (d *fastDecoder) Full(line string, pe *evidence.Decoded) error {
	if p := slowDecode([]byte(line), pe); p != nil {
		return p
	}
	return nil
}

func slowDecode(raw []byte, pe *evidence.Decoded) *lineProblem {
	if err := schemas.ValidateEventJSON(raw); err != nil {
		var se *schemas.Error
		if errors.As(err, &se) {
			return &lineProblem{schema: se.Problems}
		}
		return &lineProblem{schema: []schemas.Problem{{Location: "", Message: err.Error()}}}
	}
	ev, err := evidence.DecodeEvent(raw)
	if err != nil {
		return &lineProblem{decode: "valid against the schema but not decodable: " + err.Error()}
	}
	pe.Event = ev
	return nil
}
