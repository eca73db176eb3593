package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// Limits of what Load reads: a profile is a page of YAML, so anything
// much larger is refused before it is parsed (and an alias bomb before it
// is expanded).
const (
	MaxBytes = 1 << 20
	MaxNodes = 100_000
)

// Problem is one thing wrong with a profile, at a line (1-based) and a
// field path ("outbox.progress.kind", "database.migrations[0]").
type Problem struct {
	Line    int
	Field   string
	Message string
}

// Error lists every problem of one profile file. It wraps ErrInvalid.
type Error struct {
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = fmt.Sprintf("%s:%d: %s: %s", e.File, p.Line, p.Field, p.Message)
	}
	return strings.Join(lines, "\n")
}

func (e *Error) Unwrap() error { return ErrInvalid }

// Load reads and validates the profile at path. A problem with the
// profile is an *Error (wrapping ErrInvalid) naming the file by its base
// name; a file that cannot be read is another error.
func Load(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", path, err)
	}
	return Parse(filepath.Base(path), data)
}

// Parse validates the profile text data; name is the file name its
// messages give.
func Parse(name string, data []byte) (*Profile, error) {
	p := &parser{file: name, secrets: findSecrets(data), index: map[string]nodeInfo{}}
	prof := p.parse(data)
	if len(p.problems) > 0 {
		for i := range p.problems {
			p.problems[i].Field = p.redact(p.problems[i].Field)
			p.problems[i].Message = p.redact(p.problems[i].Message)
		}
		sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Line < p.problems[j].Line })
		return nil, &Error{File: name, Problems: p.problems}
	}
	return prof, nil
}

// nodeInfo locates one value of the document by its JSON pointer: the
// line of the key that names it (or of the item) and of the value.
type nodeInfo struct {
	keyLine, line int
	array         bool
}

type parser struct {
	file     string
	secrets  []string
	index    map[string]nodeInfo
	nodes    int
	problems []Problem
}

func (p *parser) add(line int, field, format string, args ...any) {
	if line < 1 {
		line = 1
	}
	if field == "" {
		field = "(profile)"
	}
	p.problems = append(p.problems, Problem{Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

var yamlLineRE = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)

func (p *parser) parse(data []byte) *Profile {
	if len(data) > MaxBytes {
		p.add(1, "", "the profile is larger than %d bytes", MaxBytes)
		return nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		msg := err.Error()
		line := 1
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		p.add(line, "", "not valid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
		return nil
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		p.add(1, "", "the profile is empty")
		return nil
	}
	doc := p.convert(root.Content[0], "", root.Content[0].Line)
	if len(p.problems) > 0 {
		return nil
	}
	if err := schemas.ValidateProfile(doc); err != nil {
		var se *schemas.Error
		if !errors.As(err, &se) {
			p.add(1, "", "cannot validate: %v", err)
			return nil
		}
		for _, pr := range se.Problems {
			p.schemaProblem(pr)
		}
		return nil
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		p.add(1, "", "cannot encode: %v", err)
		return nil
	}
	var prof Profile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&prof); err != nil {
		// The schema admits only what the struct reads; this is a bug of
		// the two disagreeing, said as such rather than hidden.
		p.add(1, "", "the profile passed its schema but not its decoder: %v", err)
		return nil
	}
	p.crossChecks(&prof)
	if len(p.problems) > 0 {
		return nil
	}
	prof.setDefaults()
	return &prof
}

// convert turns a YAML node into the generic value the schema validator
// takes, recording each value's lines under its JSON pointer.
func (p *parser) convert(n *yaml.Node, ptr string, keyLine int) any {
	p.nodes++
	if p.nodes > MaxNodes {
		if p.nodes == MaxNodes+1 {
			p.add(n.Line, fieldPath(ptr, p.index), "the profile has more than %d values (an alias expanded too often?)", MaxNodes)
		}
		return nil
	}
	p.index[ptr] = nodeInfo{keyLine: keyLine, line: n.Line, array: n.Kind == yaml.SequenceNode}
	switch n.Kind {
	case yaml.AliasNode:
		return p.convert(n.Alias, ptr, keyLine)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || (k.ShortTag() != "!!str" && k.ShortTag() != "!!int") {
				p.add(k.Line, fieldPath(ptr, p.index), "a key must be a plain name")
				continue
			}
			child := ptr + "/" + escapePointer(k.Value)
			if _, dup := m[k.Value]; dup {
				p.add(k.Line, fieldPath(child, p.index), "duplicate key (first at line %d)", p.index[child].keyLine)
				continue
			}
			m[k.Value] = p.convert(v, child, k.Line)
		}
		return m
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			out[i] = p.convert(c, ptr+"/"+strconv.Itoa(i), c.Line)
		}
		return out
	case yaml.ScalarNode:
		return p.scalar(n, ptr)
	}
	p.add(n.Line, fieldPath(ptr, p.index), "unsupported YAML node")
	return nil
}

func (p *parser) scalar(n *yaml.Node, ptr string) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			p.add(n.Line, fieldPath(ptr, p.index), "not a boolean")
		}
		return b
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			p.add(n.Line, fieldPath(ptr, p.index), "integer out of range")
			return nil
		}
		return json.Number(strconv.FormatInt(i, 10))
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			p.add(n.Line, fieldPath(ptr, p.index), "not a finite number")
			return nil
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	default: // !!str, !!timestamp, !!binary: the text as written
		return n.Value
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// fieldPath turns a JSON pointer into the dotted path a user reads:
// "/outbox/progress/kind" -> "outbox.progress.kind", an array index as
// "[0]".
func fieldPath(ptr string, index map[string]nodeInfo) string {
	if ptr == "" {
		return ""
	}
	var b strings.Builder
	cur := ""
	for _, seg := range strings.Split(ptr[1:], "/") {
		if index[cur].array {
			b.WriteString("[" + seg + "]")
		} else {
			if b.Len() > 0 {
				b.WriteString(".")
			}
			b.WriteString(unescapePointer(seg))
		}
		cur += "/" + seg
	}
	return b.String()
}

var quotedRE = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'`)

// schemaProblem turns a schema violation into problems at lines: an
// unknown field at its key, a missing one at the object that lacks it.
func (p *parser) schemaProblem(pr schemas.Problem) {
	at := p.index[pr.Location]
	switch {
	case strings.HasPrefix(pr.Message, "additionalProperties "):
		for _, m := range quotedRE.FindAllStringSubmatch(pr.Message, -1) {
			child := pr.Location + "/" + escapePointer(m[1])
			p.add(p.index[child].keyLine, fieldPath(child, p.index), "unknown field")
		}
	case strings.HasPrefix(pr.Message, "missing properties: "):
		for _, m := range quotedRE.FindAllStringSubmatch(pr.Message, -1) {
			child := pr.Location + "/" + escapePointer(m[1])
			p.add(at.keyLine, fieldPath(child, p.index), "missing (required)")
		}
	case strings.HasPrefix(pr.Message, "expected "):
		want, got, _ := strings.Cut(strings.TrimPrefix(pr.Message, "expected "), ", but got ")
		p.add(at.line, fieldPath(pr.Location, p.index), "wrong type: want %s, got %s", want, got)
	default:
		p.add(at.line, fieldPath(pr.Location, p.index), "%s", pr.Message)
	}
}

// templateRE finds the roles a template names: {{role.X}}, {{proxy.X.db}}.
var templateRE = regexp.MustCompile(`\{\{\s*(role|proxy)\.([A-Za-z0-9_-]+)`)

// crossChecks are the rules the schema cannot state.
func (p *parser) crossChecks(prof *Profile) {
	if prof.Outbox.Aggregate == nil {
		if prof.Promises.Order == OrderPerAggregate {
			p.add(p.index["/promises/order"].line, "promises.order", "per-aggregate order needs outbox.aggregate")
		}
		if prof.Topic.Key == "" || prof.Topic.Key == KeyAggregate {
			ptr := "/topic/key"
			if _, ok := p.index[ptr]; !ok {
				ptr = "/topic"
			}
			p.add(p.index[ptr].line, "topic.key", "a record keyed by its aggregate (the default) needs outbox.aggregate; or say key: none")
		}
	}
	if l := prof.Load; l != nil {
		if (l.HTTP == nil) == (l.SQL == nil) {
			p.add(p.index["/load"].keyLine, "load", "give exactly one of http (requests to your service) and sql (statements the audit's client runs)")
		} else if l.SQL != nil {
			p.checkSQLLoad(prof)
		}
	}
	p.checkTemplates("/load", prof)
	p.checkTemplates("/roles", prof)
	p.checkInvariants(prof)
}

// checkInvariants reads each invariant's SQL as an anti-join (the one
// shape the verifier evaluates without a database) and refuses two
// invariants of one id.
func (p *parser) checkInvariants(prof *Profile) {
	seen := map[string]int{}
	for i := range prof.Invariants {
		inv := &prof.Invariants[i]
		ptr := "/invariants/" + strconv.Itoa(i)
		if first, dup := seen[inv.ID]; dup {
			p.add(p.index[ptr+"/id"].line, fieldPath(ptr+"/id", p.index), "duplicate invariant id (first at line %d)", p.index["/invariants/"+strconv.Itoa(first)+"/id"].line)
		}
		seen[inv.ID] = i
		aj, err := ParseAntiJoin(inv.SQL)
		if err != nil {
			p.add(p.index[ptr+"/sql"].line, fieldPath(ptr+"/sql", p.index), "%v", err)
			continue
		}
		inv.Join = aj
	}
}

// checkTemplates checks every string under ptr for a role it names that
// the profile does not define.
func (p *parser) checkTemplates(prefix string, prof *Profile) {
	ptrs := make([]string, 0)
	for ptr := range p.index {
		if ptr == prefix || strings.HasPrefix(ptr, prefix+"/") {
			ptrs = append(ptrs, ptr)
		}
	}
	sort.Strings(ptrs)
	raw, _ := json.Marshal(prof)
	var doc any
	_ = json.Unmarshal(raw, &doc)
	for _, ptr := range ptrs {
		s, ok := pointerValue(doc, ptr).(string)
		if !ok {
			continue
		}
		for _, m := range templateRE.FindAllStringSubmatch(s, -1) {
			if _, ok := prof.Roles[m[2]]; !ok {
				p.add(p.index[ptr].line, fieldPath(ptr, p.index), "the template names role %q, which roles does not define", m[2])
			}
		}
	}
}

func pointerValue(doc any, ptr string) any {
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		switch n := doc.(type) {
		case map[string]any:
			doc = n[unescapePointer(seg)]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n) {
				return nil
			}
			doc = n[i]
		default:
			return nil
		}
	}
	return doc
}
