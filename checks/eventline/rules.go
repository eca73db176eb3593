package eventline

// The schema-rule compiler of the fast path (see decoder.go): it
// compiles the embedded schemas/event.schema.json into eventRules, which
// Decoder.validate applies to the values of one scanned line.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/schemas"
)

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
	props    [maxEventFields]*propRule
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
				if err := compatible(pr, eventFields[f].kind); err != nil {
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
	for f, fi := range eventFields {
		if r.required&(1<<f) != 0 && r.props[f] == nil {
			return nil, fmt.Errorf("event schema: required %s has no property schema", fi.name)
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

// prop compiles the schema of one property (following a $ref to $defs).
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
		if err := c.keyword(p, k, x); err != nil {
			return nil, err
		}
	}
	return p, p.consistent()
}

// keyword compiles one keyword k with value x of a property schema into p.
func (c *ruleCompiler) keyword(p *propRule, k string, x any) error {
	var err error
	switch k {
	case "description", "title":
	case "type":
		s, _ := x.(string)
		if s != "string" && s != "integer" && s != "array" {
			return fmt.Errorf("type %v", x)
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
		*map[string]*int{"minLength": &p.minLen, "maxLength": &p.maxLen, "minItems": &p.minItems, "maxItems": &p.maxItems}[k] = int(n)
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
			return fmt.Errorf("enum %v", x)
		}
		p.enum = []string{}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("non-string enum value %v", e)
			}
			p.enum = append(p.enum, s)
		}
	case "const":
		s, ok := x.(string)
		if !ok {
			return fmt.Errorf("non-string const %v", x)
		}
		p.konst = &s
	case "items":
		p.items, err = c.prop(x)
	default:
		return fmt.Errorf("keyword %q unknown to the fast decoder", k)
	}
	return err
}

// consistent checks that p's keywords make a rule the fast decoder can
// apply.
func (p *propRule) consistent() error {
	switch {
	case p.typ == "" && p.enum == nil && p.konst == nil:
		return fmt.Errorf("no type, enum or const")
	case p.typ != "array" && (p.items != nil || p.minItems >= 0 || p.maxItems >= 0):
		return fmt.Errorf("array keywords on a non-array")
	case p.typ == "array" && p.items == nil:
		return fmt.Errorf("array without items")
	case p.items != nil && p.items.typ != "" && p.items.typ != "string":
		return fmt.Errorf("array items must be strings")
	}
	return nil
}

// compatible checks that the fast decoder can store what the rule admits.
func compatible(p *propRule, k goKind) error {
	switch {
	case k == gkStrings && p.typ == "array":
	case (k == gkInt64 || k == gkInt64Ptr || k == gkInt32Ptr || k == gkInt) && p.typ == "integer":
	case k == gkString && (p.typ == "string" || p.typ == ""):
	case (k == gkTime || k == gkTimePtr) && p.typ == "string" && p.dateTime:
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
// the fast decoder does not understand, or evidence.Event has a field it
// cannot store (then every line is validated by the full validator).
// fastRulesErr says why.
var fastRules, fastRulesErr = compileFastRules()

func compileFastRules() (*eventRules, error) {
	if eventFieldsErr != nil {
		return nil, eventFieldsErr
	}
	return compileEventRules(schemas.Source(schemas.EventFile))
}
