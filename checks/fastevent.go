package checks

// Fast, schema-exact decoding of event lines.
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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// eventField is one property of an event line.
type eventField uint8

const (
	fSeq eventField = iota
	fTime
	fRunID
	fScenario
	fActor
	fKind
	fEventID
	fOrderID
	fClaimVersion
	fClaimID
	fLeaseUntil
	fStateBefore
	fState
	fRows
	fTopic
	fPartition
	fOffset
	fConsumer
	fNotificationID
	fKey
	fSKU
	fQuantity
	fStock
	fStatus
	fReason
	fWrites
	fPayloadSHA256
	fPoint
	fDetail
	fInvariant
	fErr
	numEventFields
)

// eventFieldNames are the JSON names, indexed by eventField. A test checks
// them against the json tags of evidence.Event.
var eventFieldNames = [numEventFields]string{
	"seq", "time", "run_id", "scenario", "actor", "kind", "event_id", "order_id", "claim_version", "claim_id",
	"lease_until", "state_before", "state", "rows", "topic", "partition", "offset", "consumer", "notification_id",
	"key", "sku", "quantity", "stock", "status", "reason", "writes", "payload_sha256", "point", "detail",
	"invariant", "err",
}

// goKind is the Go type of a field in evidence.Event.
type goKind uint8

const (
	gkInt64 goKind = iota + 1 // int64 or *int64
	gkInt32                   // *int32
	gkInt                     // int (64-bit on every supported platform)
	gkString
	gkTime    // time.Time or *time.Time
	gkStrings // []string
)

var eventFieldGo = [numEventFields]goKind{
	fSeq: gkInt64, fTime: gkTime, fRunID: gkString, fScenario: gkString, fActor: gkString, fKind: gkString,
	fEventID: gkString, fOrderID: gkInt64, fClaimVersion: gkInt64, fClaimID: gkString, fLeaseUntil: gkTime,
	fStateBefore: gkString, fState: gkString, fRows: gkInt64, fTopic: gkString, fPartition: gkInt32,
	fOffset: gkInt64, fConsumer: gkString, fNotificationID: gkInt64, fKey: gkString, fSKU: gkString,
	fQuantity: gkInt64, fStock: gkInt64, fStatus: gkInt, fReason: gkString, fWrites: gkStrings,
	fPayloadSHA256: gkString, fPoint: gkString, fDetail: gkString, fInvariant: gkString, fErr: gkString,
}

// fieldByName maps a JSON name to its field; a switch, because it runs
// for every key of every line.
func fieldByName(name string) (eventField, bool) {
	switch name {
	case "seq":
		return fSeq, true
	case "time":
		return fTime, true
	case "run_id":
		return fRunID, true
	case "scenario":
		return fScenario, true
	case "actor":
		return fActor, true
	case "kind":
		return fKind, true
	case "event_id":
		return fEventID, true
	case "order_id":
		return fOrderID, true
	case "claim_version":
		return fClaimVersion, true
	case "claim_id":
		return fClaimID, true
	case "lease_until":
		return fLeaseUntil, true
	case "state_before":
		return fStateBefore, true
	case "state":
		return fState, true
	case "rows":
		return fRows, true
	case "topic":
		return fTopic, true
	case "partition":
		return fPartition, true
	case "offset":
		return fOffset, true
	case "consumer":
		return fConsumer, true
	case "notification_id":
		return fNotificationID, true
	case "key":
		return fKey, true
	case "sku":
		return fSKU, true
	case "quantity":
		return fQuantity, true
	case "stock":
		return fStock, true
	case "status":
		return fStatus, true
	case "reason":
		return fReason, true
	case "writes":
		return fWrites, true
	case "payload_sha256":
		return fPayloadSHA256, true
	case "point":
		return fPoint, true
	case "detail":
		return fDetail, true
	case "invariant":
		return fInvariant, true
	case "err":
		return fErr, true
	}
	return 0, false
}

// propRule is the compiled schema of one property.
type propRule struct {
	typ                string // "string", "integer", "array", or "" (enum/const of strings only)
	hasMin, hasMax     bool
	min, max           int64
	minLen, maxLen     int // -1: none
	pattern            *regexp.Regexp
	dateTime           bool
	enum               []string
	konst              *string
	items              *propRule
	minItems, maxItems int // -1: none
}

// condRule is one allOf entry: if field is absent or equals value, then
// required must be present and exactly one of oneOf (when set) must hold.
type condRule struct {
	field    eventField
	value    string
	required uint64
	oneOf    []uint64
}

// eventRules is the compiled event schema.
type eventRules struct {
	props    [numEventFields]*propRule
	required uint64
	conds    []condRule
}

// compileEventRules compiles the subset of JSON Schema used by the event
// schema. Any keyword or shape outside that subset is an error: the caller
// then disables the fast path.
func compileEventRules(src []byte) (*eventRules, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("event schema: %w", err)
	}
	defs, _ := root["$defs"].(map[string]any)
	c := &ruleCompiler{defs: defs}
	r := &eventRules{}
	for k, v := range root {
		switch k {
		case "$schema", "$id", "title", "description", "$defs":
		case "type":
			if v != "object" {
				return nil, fmt.Errorf("event schema: type %v", v)
			}
		case "additionalProperties":
			if v != false {
				return nil, fmt.Errorf("event schema: additionalProperties must be false")
			}
		case "required":
			m, err := c.mask(v)
			if err != nil {
				return nil, err
			}
			r.required = m
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("event schema: properties is not an object")
			}
			for name, ps := range props {
				f, ok := fieldByName(name)
				if !ok {
					return nil, fmt.Errorf("event schema: property %q unknown to the fast decoder", name)
				}
				pr, err := c.prop(ps)
				if err != nil {
					return nil, fmt.Errorf("event schema: property %s: %w", name, err)
				}
				if err := compatible(pr, eventFieldGo[f]); err != nil {
					return nil, fmt.Errorf("event schema: property %s: %w", name, err)
				}
				r.props[f] = pr
			}
		case "allOf":
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("event schema: allOf is not an array")
			}
			for i, item := range list {
				cr, err := c.cond(item)
				if err != nil {
					return nil, fmt.Errorf("event schema: allOf/%d: %w", i, err)
				}
				r.conds = append(r.conds, cr)
			}
		default:
			return nil, fmt.Errorf("event schema: keyword %q unknown to the fast decoder", k)
		}
	}
	for f := range numEventFields {
		if r.required&(1<<f) != 0 && r.props[f] == nil {
			return nil, fmt.Errorf("event schema: required %s has no property schema", eventFieldNames[f])
		}
	}
	return r, nil
}

type ruleCompiler struct{ defs map[string]any }

func (c *ruleCompiler) mask(v any) (uint64, error) {
	list, ok := v.([]any)
	if !ok {
		return 0, fmt.Errorf("required is not an array")
	}
	var m uint64
	for _, x := range list {
		s, _ := x.(string)
		f, ok := fieldByName(s)
		if !ok {
			return 0, fmt.Errorf("required %v unknown to the fast decoder", x)
		}
		m |= 1 << f
	}
	return m, nil
}

func intOf(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%v is not a number", v)
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%v is not an int64", v)
	}
	return i, nil
}

func (c *ruleCompiler) prop(v any) (*propRule, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema is not an object")
	}
	if ref, ok := m["$ref"]; ok {
		for k := range m {
			if k != "$ref" && k != "description" && k != "title" {
				return nil, fmt.Errorf("$ref with sibling %q", k)
			}
		}
		s, _ := ref.(string)
		name, ok := strings.CutPrefix(s, "#/$defs/")
		if !ok || c.defs[name] == nil {
			return nil, fmt.Errorf("unsupported $ref %q", s)
		}
		return c.prop(c.defs[name])
	}
	p := &propRule{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	for k, x := range m {
		var err error
		switch k {
		case "description", "title":
		case "type":
			s, _ := x.(string)
			if s != "string" && s != "integer" && s != "array" {
				return nil, fmt.Errorf("type %v", x)
			}
			p.typ = s
		case "minimum":
			p.hasMin = true
			p.min, err = intOf(x)
		case "maximum":
			p.hasMax = true
			p.max, err = intOf(x)
		case "minLength", "maxLength", "minItems", "maxItems":
			var n int64
			n, err = intOf(x)
			if err == nil && (n < 0 || n > math.MaxInt32) {
				err = fmt.Errorf("%s %d out of range", k, n)
			}
			switch k {
			case "minLength":
				p.minLen = int(n)
			case "maxLength":
				p.maxLen = int(n)
			case "minItems":
				p.minItems = int(n)
			default:
				p.maxItems = int(n)
			}
		case "pattern":
			s, _ := x.(string)
			p.pattern, err = regexp.Compile(s) // the validator compiles patterns with regexp too
		case "format":
			if x != "date-time" {
				err = fmt.Errorf("format %v", x)
			}
			p.dateTime = true
		case "enum":
			list, ok := x.([]any)
			if !ok || len(list) == 0 {
				return nil, fmt.Errorf("enum %v", x)
			}
			p.enum = []string{}
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("non-string enum value %v", e)
				}
				p.enum = append(p.enum, s)
			}
		case "const":
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("non-string const %v", x)
			}
			p.konst = &s
		case "items":
			p.items, err = c.prop(x)
		default:
			return nil, fmt.Errorf("keyword %q unknown to the fast decoder", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if p.typ == "" && p.enum == nil && p.konst == nil {
		return nil, fmt.Errorf("no type, enum or const")
	}
	if p.typ != "array" && (p.items != nil || p.minItems >= 0 || p.maxItems >= 0) {
		return nil, fmt.Errorf("array keywords on a non-array")
	}
	if p.typ == "array" && p.items == nil {
		return nil, fmt.Errorf("array without items")
	}
	if p.items != nil && p.items.typ != "" && p.items.typ != "string" {
		return nil, fmt.Errorf("array items must be strings")
	}
	return p, nil
}

// compatible checks that the fast decoder can store what the rule admits.
func compatible(p *propRule, k goKind) error {
	switch {
	case k == gkStrings && p.typ == "array":
	case (k == gkInt64 || k == gkInt32 || k == gkInt) && p.typ == "integer":
	case k == gkString && (p.typ == "string" || p.typ == ""):
	case k == gkTime && p.typ == "string" && p.dateTime:
	default:
		return fmt.Errorf("schema type %q does not fit the Go field", p.typ)
	}
	return nil
}

func (c *ruleCompiler) cond(v any) (condRule, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 2 || m["if"] == nil || m["then"] == nil {
		return condRule{}, fmt.Errorf("only {if, then} is supported")
	}
	ifm, _ := m["if"].(map[string]any)
	props, _ := ifm["properties"].(map[string]any)
	if len(ifm) != 1 || len(props) != 1 {
		return condRule{}, fmt.Errorf("if must be {properties: {field: {const: value}}}")
	}
	var cr condRule
	for name, ps := range props {
		f, ok := fieldByName(name)
		psm, _ := ps.(map[string]any)
		val, isStr := psm["const"].(string)
		if !ok || len(psm) != 1 || !isStr {
			return condRule{}, fmt.Errorf("if must be {properties: {field: {const: string}}}")
		}
		cr.field, cr.value = f, val
	}
	then, _ := m["then"].(map[string]any)
	for k, x := range then {
		switch k {
		case "required":
			mk, err := c.mask(x)
			if err != nil {
				return condRule{}, err
			}
			cr.required = mk
		case "oneOf":
			list, ok := x.([]any)
			if !ok || len(list) == 0 {
				return condRule{}, fmt.Errorf("oneOf %v", x)
			}
			cr.oneOf = []uint64{}
			for _, alt := range list {
				am, _ := alt.(map[string]any)
				if len(am) != 1 || am["required"] == nil {
					return condRule{}, fmt.Errorf("oneOf alternatives must be {required: [...]}")
				}
				mk, err := c.mask(am["required"])
				if err != nil {
					return condRule{}, err
				}
				cr.oneOf = append(cr.oneOf, mk)
			}
		default:
			return condRule{}, fmt.Errorf("then keyword %q unknown to the fast decoder", k)
		}
	}
	return cr, nil
}

// fastRules is the compiled event schema, or nil when it uses something
// the fast decoder does not understand (then every line is validated by
// the full validator). fastRulesErr says why.
var fastRules, fastRulesErr = compileEventRules(schemas.Source(schemas.EventFile))

// token kinds of one value.
const (
	tokString = iota + 1
	tokInt
	tokArray
)

type lineValue struct {
	tok int
	s   string
	n   int64
	arr []string
}

// fastDecoder decodes lines on one goroutine; it is not safe for
// concurrent use (it caches pattern matches).
type fastDecoder struct {
	rules *eventRules
	vals  [numEventFields]lineValue
	pats  [numEventFields]map[string]struct{}
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

func skipWS(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scan tokenizes one flat JSON object into d.vals.
func (d *fastDecoder) scan(s string) (present uint64, ok bool) {
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return 0, false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return 0, false // empty: the full validator names what is missing
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return 0, false
		}
		key, j, escaped, ok := scanString(s, i)
		if !ok || escaped {
			return 0, false
		}
		f, known := fieldByName(key)
		if !known || present&(1<<f) != 0 {
			return 0, false
		}
		i = skipWS(s, j)
		if i >= len(s) || s[i] != ':' {
			return 0, false
		}
		i = skipWS(s, i+1)
		if i >= len(s) {
			return 0, false
		}
		v := &d.vals[f]
		switch c := s[i]; {
		case c == '"':
			v.tok = tokString
			v.s, i, _, ok = scanString(s, i)
		case c == '-' || (c >= '0' && c <= '9'):
			v.tok = tokInt
			v.n, i, ok = scanInt(s, i)
		case c == '[':
			v.tok = tokArray
			v.arr, i, ok = scanStrings(s, i, v.arr[:0])
		default:
			return 0, false
		}
		if !ok {
			return 0, false
		}
		present |= 1 << f
		i = skipWS(s, i)
		if i >= len(s) {
			return 0, false
		}
		if s[i] == ',' {
			i = skipWS(s, i+1)
			continue
		}
		if s[i] != '}' {
			return 0, false
		}
		i = skipWS(s, i+1)
		return present, i == len(s)
	}
}

// scanString reads the JSON string starting at s[i] == '"'. Without
// escapes the result is a substring of s (no allocation).
func scanString(s string, i int) (val string, next int, escaped, ok bool) {
	start := i + 1
	ascii := true
	for j := start; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '"':
			val = s[start:j]
			if !ascii && !utf8.ValidString(val) {
				return "", 0, false, false
			}
			return val, j + 1, false, true
		case c == '\\':
			return unescape(s, start)
		case c < 0x20:
			return "", 0, false, false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", 0, false, false
}

// unescape reads a string with escapes. \u escapes of surrogates are left
// to the full decoder (encoding/json replaces lone surrogates).
func unescape(s string, start int) (val string, next int, escaped, ok bool) {
	var b strings.Builder
	seg := start
	for j := start; j < len(s); {
		c := s[j]
		switch {
		case c == '"':
			b.WriteString(s[seg:j])
			val = b.String()
			if !utf8.ValidString(val) {
				return "", 0, false, false
			}
			return val, j + 1, true, true
		case c < 0x20:
			return "", 0, false, false
		case c == '\\':
			b.WriteString(s[seg:j])
			if j+1 >= len(s) {
				return "", 0, false, false
			}
			switch s[j+1] {
			case '"', '\\', '/':
				b.WriteByte(s[j+1])
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				if j+6 > len(s) {
					return "", 0, false, false
				}
				r, err := strconv.ParseUint(s[j+2:j+6], 16, 32)
				if err != nil || (r >= 0xD800 && r <= 0xDFFF) {
					return "", 0, false, false
				}
				b.WriteRune(rune(r))
				j += 4
			default:
				return "", 0, false, false
			}
			j += 2
			seg = j
		default:
			j++
		}
	}
	return "", 0, false, false
}

// scanInt reads -?(0|[1-9][0-9]*) that fits an int64; a fraction or an
// exponent is undecided.
func scanInt(s string, i int) (int64, int, bool) {
	start := i
	if s[i] == '-' {
		i++
	}
	if i >= len(s) || s[i] < '0' || s[i] > '9' {
		return 0, 0, false
	}
	if s[i] == '0' {
		i++
	} else {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) {
		switch s[i] {
		case '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return 0, 0, false
		}
	}
	n, err := strconv.ParseInt(s[start:i], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return n, i, true
}

func scanStrings(s string, i int, buf []string) ([]string, int, bool) {
	i = skipWS(s, i+1)
	out := buf
	if i < len(s) && s[i] == ']' {
		return out, i + 1, true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return nil, 0, false
		}
		v, j, _, ok := scanString(s, i)
		if !ok {
			return nil, 0, false
		}
		out = append(out, v)
		i = skipWS(s, j)
		if i >= len(s) {
			return nil, 0, false
		}
		if s[i] == ']' {
			return out, i + 1, true
		}
		if s[i] != ',' {
			return nil, 0, false
		}
		i = skipWS(s, i+1)
	}
}

// validate applies the compiled schema to the scanned values.
func (d *fastDecoder) validate(present uint64) bool {
	r := d.rules
	if present&r.required != r.required {
		return false
	}
	for f := range numEventFields {
		if present&(1<<f) == 0 {
			continue
		}
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

// parseStrictTime accepts YYYY-MM-DDTHH:MM:SS[.1-9 digits]Z with valid
// ranges (no leap second): a subset of both RFC 3339 as the validator
// checks it and of what time.Time.UnmarshalJSON accepts, decoded to the
// same instant in UTC.
func parseStrictTime(s string) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for _, c := range []byte(s[a:b]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 7)
	dd, ok3 := num(8, 10)
	hh, ok4 := num(11, 13)
	mi, ok5 := num(14, 16)
	ss, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || dd < 1 || hh > 23 || mi > 59 || ss > 59 {
		return time.Time{}, false
	}
	if dd > daysIn(time.Month(mo), y) {
		return time.Time{}, false
	}
	ns := 0
	rest := s[19 : len(s)-1]
	if rest != "" {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
			return time.Time{}, false
		}
		frac, ok := num(20, 19+len(rest))
		if !ok {
			return time.Time{}, false
		}
		for k := len(rest) - 1; k < 9; k++ {
			frac *= 10
		}
		ns = frac
	}
	return time.Date(y, time.Month(mo), dd, hh, mi, ss, ns, time.UTC), true
}

func daysIn(m time.Month, year int) int {
	switch m {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// fill stores the validated values into pe, which is empty.
func (d *fastDecoder) fill(present uint64, pe *evidence.Decoded) bool {
	e := &pe.Event
	boxInt := pe.Box
	for f := range numEventFields {
		if present&(1<<f) == 0 {
			continue
		}
		v := &d.vals[f]
		switch f {
		case fSeq:
			e.Seq = v.n
		case fTime:
			t, ok := parseStrictTime(v.s)
			if !ok {
				return false
			}
			e.Time = t
		case fRunID:
			e.RunID = v.s
		case fScenario:
			e.Scenario = v.s
		case fActor:
			e.Actor = v.s
		case fKind:
			e.Kind = internKind(v.s)
		case fEventID:
			e.EventID = v.s
		case fOrderID:
			e.OrderID = boxInt(v.n)
		case fClaimVersion:
			e.ClaimVersion = boxInt(v.n)
		case fClaimID:
			e.ClaimID = v.s
		case fLeaseUntil:
			t, ok := parseStrictTime(v.s)
			if !ok {
				return false
			}
			e.LeaseUntil = pe.BoxTime(t)
		case fStateBefore:
			e.StateBefore = internState(v.s)
		case fState:
			e.State = internState(v.s)
		case fRows:
			e.Rows = boxInt(v.n)
		case fTopic:
			e.Topic = v.s
		case fPartition:
			if v.n < math.MinInt32 || v.n > math.MaxInt32 {
				return false // encoding/json refuses it: let it say so
			}
			e.Partition = pe.Box32(int32(v.n))
		case fOffset:
			e.Offset = boxInt(v.n)
		case fConsumer:
			e.Consumer = v.s
		case fNotificationID:
			e.NotificationID = boxInt(v.n)
		case fKey:
			e.Key = v.s
		case fSKU:
			e.SKU = v.s
		case fQuantity:
			e.Quantity = boxInt(v.n)
		case fStock:
			e.Stock = boxInt(v.n)
		case fStatus:
			if v.n < math.MinInt || v.n > math.MaxInt {
				return false
			}
			e.Status = int(v.n)
		case fReason:
			e.Reason = v.s
		case fWrites:
			e.Writes = append(make([]string, 0, len(v.arr)), v.arr...)
		case fPayloadSHA256:
			e.PayloadSHA256 = v.s
		case fPoint:
			e.Point = v.s
		case fDetail:
			e.Detail = v.s
		case fInvariant:
			e.Invariant = v.s
		case fErr:
			e.Err = v.s
		}
	}
	return true
}

func internKind(s string) evidence.Kind {
	for _, k := range evidence.Kinds {
		if string(k) == s {
			return k
		}
	}
	return evidence.Kind(s)
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
