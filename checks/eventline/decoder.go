package eventline

import (
	"errors"
	"math"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// Decoder decodes event lines on one goroutine; it is not safe for
// concurrent use (it caches pattern matches). It is an evidence.Decoder:
// Fast is the fast path, Full the full validator.
type Decoder struct {
	rules *eventRules
	vals  [maxEventFields]lineValue
	pats  [maxEventFields]map[string]struct{}
}

// NewDecoder returns a decoder whose fast path is compiled from the
// embedded event schema (when the schema uses a keyword the compiler does
// not know, every line takes the full validator).
func NewDecoder() *Decoder { return &Decoder{rules: fastRules} }

const patCacheMax = 512

// Fast fills pe from line and reports whether the fast path decided the
// line is valid. false means undecided: use Full, the full validator.
func (d *Decoder) Fast(line string, pe *evidence.Decoded) bool {
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
func (d *Decoder) validate(present uint64) bool {
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

func (d *Decoder) check(f eventField, p *propRule, v *lineValue) bool {
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

func (d *Decoder) checkString(f eventField, p *propRule, s string) bool {
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
func (d *Decoder) fill(present uint64, pe *evidence.Decoded) bool {
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

// Problem is why a line is not a valid event: the error Full returns.
// Exactly one of its fields is set.
type Problem struct {
	Schema []schemas.Problem // schema violations, every one with its location
	Decode string            // valid against the schema but not decodable: why
}

func (p *Problem) Error() string { return p.String() }

func (p *Problem) String() string {
	if p.Decode != "" {
		return p.Decode
	}
	parts := make([]string, len(p.Schema))
	for i, q := range p.Schema {
		parts[i] = q.String()
	}
	return strings.Join(parts, "; ")
}

// decodeLine decodes one event line: the fast path, else the full
// validator and the strict decoder. A nil problem means pe holds the event.
func (d *Decoder) decodeLine(line string, pe *evidence.Decoded) *Problem {
	pe.Reset()
	if d.Fast(line, pe) {
		return nil
	}
	pe.Reset()
	return slowDecode([]byte(line), pe)
}

// Full validates line against the event schema with every problem named
// and decodes it strictly: a *Problem when it is not a valid event.
func (d *Decoder) Full(line string, pe *evidence.Decoded) error {
	if p := slowDecode([]byte(line), pe); p != nil {
		return p
	}
	return nil
}

func slowDecode(raw []byte, pe *evidence.Decoded) *Problem {
	if err := schemas.ValidateEventJSON(raw); err != nil {
		var se *schemas.Error
		if errors.As(err, &se) {
			return &Problem{Schema: se.Problems}
		}
		return &Problem{Schema: []schemas.Problem{{Location: "", Message: err.Error()}}}
	}
	ev, err := evidence.DecodeEvent(raw)
	if err != nil {
		return &Problem{Decode: "valid against the schema but not decodable: " + err.Error()}
	}
	pe.Event = ev
	return nil
}
