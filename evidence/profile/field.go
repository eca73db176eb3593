package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Field is where a value sits in a row: a column, or a JSON path into a
// column's JSON text ("payload$.meta.version", "payload$.items[0].sku").
type Field struct {
	Column string
	Path   []Step
}

// Step is one step of a JSON path: a member name, or an array index.
type Step struct {
	Name    string
	Index   int
	IsIndex bool
}

// ParseField parses "column" or "column$.a.b[0]".
func ParseField(s string) (Field, error) {
	col, path, hasPath := strings.Cut(s, "$")
	if !identifier(col) {
		return Field{}, fmt.Errorf("field %q: %q is not a column name", s, col)
	}
	f := Field{Column: col}
	if !hasPath {
		return f, nil
	}
	steps, err := parsePath("$" + path)
	if err != nil {
		return Field{}, fmt.Errorf("field %q: %w", s, err)
	}
	f.Path = steps
	return f, nil
}

// ParsePath parses a JSON path into a record's value ("$.id").
func ParsePath(s string) ([]Step, error) { return parsePath(s) }

func parsePath(s string) ([]Step, error) {
	rest, ok := strings.CutPrefix(s, "$")
	if !ok || rest == "" {
		return nil, fmt.Errorf("JSON path %q: want $ and at least one .name or [index]", s)
	}
	var steps []Step
	for rest != "" {
		switch rest[0] {
		case '.':
			n := 1
			for n < len(rest) && rest[n] != '.' && rest[n] != '[' {
				n++
			}
			name := rest[1:n]
			if name == "" {
				return nil, fmt.Errorf("JSON path %q: empty member name", s)
			}
			steps = append(steps, Step{Name: name})
			rest = rest[n:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("JSON path %q: [ without ]", s)
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil || i < 0 {
				return nil, fmt.Errorf("JSON path %q: index %q is not a number", s, rest[1:end])
			}
			steps = append(steps, Step{Index: i, IsIndex: true})
			rest = rest[end+1:]
		default:
			return nil, fmt.Errorf("JSON path %q: unexpected %q", s, rest[0])
		}
	}
	return steps, nil
}

func identifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func (f Field) String() string {
	var b strings.Builder
	b.WriteString(f.Column)
	if len(f.Path) > 0 {
		b.WriteString("$")
	}
	for _, s := range f.Path {
		if s.IsIndex {
			fmt.Fprintf(&b, "[%d]", s.Index)
		} else {
			b.WriteString("." + s.Name)
		}
	}
	return b.String()
}

// MarshalJSON writes the field as its text.
func (f Field) MarshalJSON() ([]byte, error) { return json.Marshal(f.String()) }

// UnmarshalJSON parses the field's text.
func (f *Field) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	g, err := ParseField(s)
	if err != nil {
		return err
	}
	*f = g
	return nil
}

// Lookup returns the field's value in row (column name -> value, as the
// binlog reader gives it). With a path, the column must hold JSON text
// (a string or bytes); the value found is a JSON value (json.Number for a
// number). ok is false when the column is absent or NULL, the text is not
// JSON, or the path leads nowhere.
func (f Field) Lookup(row map[string]any) (any, bool) {
	v, ok := row[f.Column]
	if !ok || v == nil {
		return nil, false
	}
	if len(f.Path) == 0 {
		return v, true
	}
	return LookupPath(v, f.Path)
}

// LookupPath walks steps into v, which is JSON text (string or []byte).
func LookupPath(v any, steps []Step) (any, bool) {
	var raw []byte
	switch t := v.(type) {
	case string:
		raw = []byte(t)
	case []byte:
		raw = t
	default:
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return nil, false
	}
	for _, s := range steps {
		switch node := doc.(type) {
		case map[string]any:
			if s.IsIndex {
				return nil, false
			}
			var ok bool
			if doc, ok = node[s.Name]; !ok {
				return nil, false
			}
		case []any:
			if !s.IsIndex || s.Index >= len(node) {
				return nil, false
			}
			doc = node[s.Index]
		default:
			return nil, false
		}
	}
	return doc, doc != nil
}

// Text is the canonical text of a row or JSON value, the form in which
// event ids, aggregates and keys are compared: a string as is, bytes as
// text, numbers in decimal, a time in RFC 3339, an object or array as
// compact JSON. ok is false for nil.
func Text(v any) (string, bool) {
	switch t := v.(type) {
	case nil:
		return "", false
	case string:
		return t, true
	case []byte:
		return string(t), true
	case json.Number:
		return t.String(), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case uint64:
		return strconv.FormatUint(t, 10), true
	case int:
		return strconv.Itoa(t), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(t), true
	case time.Time:
		return t.UTC().Format(time.RFC3339Nano), true
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Sprint(t), true
		}
		return string(b), true
	}
}

// Number is the value of a row or JSON value read as an exact number
// (cursors, sequences); nil when it is nil or not a number.
func Number(v any) *big.Rat {
	switch x := v.(type) {
	case int64:
		return new(big.Rat).SetInt64(x)
	case uint64:
		return new(big.Rat).SetUint64(x)
	}
	s, ok := Text(v)
	if !ok || !MaybeNumber(s) {
		return nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil
	}
	return r
}

// MaybeNumber is false for a text big.Rat's SetString cannot read (so
// Number reads none), found without its allocations: one that does not
// start, after at most one sign, with a digit or a decimal point (most
// texts of a row: ids, names).
func MaybeNumber(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return s != "" && (s[0] == '.' || s[0] >= '0' && s[0] <= '9')
}

// Scalar is a YAML scalar that may be a string or an integer, kept as its
// text ("SENT", "2").
type Scalar string

// UnmarshalJSON accepts a string or a number.
func (s *Scalar) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = Scalar(str)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a string or an integer: %w", err)
	}
	*s = Scalar(n.String())
	return nil
}

// Duration is a time.Duration written as "30s".
type Duration time.Duration

// MarshalJSON writes the duration as Go's text for it.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON parses "500ms", "30s", "5m", "1h".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
