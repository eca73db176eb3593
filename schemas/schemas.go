// Package schemas embeds the JSON Schemas (draft 2020-12) of the evidence
// file and of one event-log line, and validates documents against them.
package schemas

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed evidence.schema.json
var evidenceSchema []byte

//go:embed event.schema.json
var eventSchema []byte

// Names of the embedded schemas.
const (
	EvidenceFile = "evidence.schema.json"
	EventFile    = "event.schema.json"
)

// Source returns the raw text of an embedded schema by file name.
func Source(name string) []byte {
	switch name {
	case EvidenceFile:
		return evidenceSchema
	case EventFile:
		return eventSchema
	case BlackBoxFile:
		return blackBoxSchema
	}
	return nil
}

var (
	once     sync.Once
	evidence *jsonschema.Schema
	event    *jsonschema.Schema
	errInit  error
)

func compile() {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	for name, src := range map[string][]byte{EvidenceFile: evidenceSchema, EventFile: eventSchema} {
		if err := c.AddResource(name, bytes.NewReader(src)); err != nil {
			errInit = fmt.Errorf("load schema %s: %w", name, err)
			return
		}
	}
	if evidence, errInit = c.Compile(EvidenceFile); errInit != nil {
		return
	}
	event, errInit = c.Compile(EventFile)
}

// Problem is one schema violation at an instance location (a JSON pointer
// into the document, "" for the root).
type Problem struct {
	Location string `json:"location"`
	Message  string `json:"message"`
}

func (p Problem) String() string {
	loc := p.Location
	if loc == "" {
		loc = "/"
	}
	return loc + ": " + p.Message
}

// Error lists every violation of one document, not only the first.
type Error struct {
	Schema   string
	Problems []Problem
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return fmt.Sprintf("does not match %s: %s", e.Schema, strings.Join(parts, "; "))
}

// ValidateEvidenceJSON and ValidateEventJSON decode raw JSON (numbers kept
// exact) and validate it.
func ValidateEvidenceJSON(raw []byte) error { return validateJSON(EvidenceFile, raw) }

// ValidateEventJSON validates one raw event line.
func ValidateEventJSON(raw []byte) error { return validateJSON(EventFile, raw) }

func validateJSON(name string, raw []byte) error {
	doc, err := decodeOne(raw)
	if err != nil {
		return err
	}
	return validate(name, doc)
}

// decodeOne decodes raw, which must hold one JSON document, numbers kept
// exact.
func decodeOne(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not JSON: trailing data after the document")
	}
	return doc, nil
}

func validate(name string, doc any) error {
	once.Do(compile)
	if errInit != nil {
		return errInit
	}
	s := evidence
	if name == EventFile {
		s = event
	}
	err := s.Validate(doc)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	return &Error{Schema: name, Problems: flatten(name, doc, ve)}
}

// flatten keeps the leaf causes: they say what is wrong and where.
func flatten(name string, doc any, ve *jsonschema.ValidationError) []Problem {
	seen := map[Problem]bool{}
	var out []Problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			p := Problem{Location: e.InstanceLocation, Message: e.Message}
			if strings.HasSuffix(e.KeywordLocation, "/not") {
				p.Message = notMessage(name, doc, e)
			}
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Location < out[j].Location })
	return out
}

// notMessage words a violation of a "not" keyword, which the library
// reports as "not failed" only: it names the value and what the schema
// forbids it to match (for a path, which of its rules it breaks).
func notMessage(name string, doc any, e *jsonschema.ValidationError) string {
	forbidden := "the schema at " + e.KeywordLocation
	if file, frag, ok := strings.Cut(e.AbsoluteKeywordLocation, "#"); ok {
		if i := strings.LastIndexByte(file, '/'); i >= 0 && schemaDoc(file[i+1:]) != nil {
			name = file[i+1:] // a keyword of another schema, reached by a $ref
		}
		if sub, ok := lookup(schemaDoc(name), frag).(map[string]any); ok {
			if pat, ok := sub["pattern"].(string); ok && len(sub) == 1 {
				forbidden = "the pattern " + pat
			}
		}
	}
	v := lookup(doc, e.InstanceLocation)
	s, isString := v.(string)
	if !isString {
		return "refused: the value matches " + forbidden + ", which is not allowed here"
	}
	if strings.HasSuffix(e.InstanceLocation, "/path") {
		var why []string
		if strings.HasPrefix(s, "/") {
			why = append(why, "it is absolute")
		}
		if slices.Contains(strings.Split(s, "/"), "..") {
			why = append(why, `it has a ".." component`)
		}
		if strings.Contains(s, `\`) {
			why = append(why, "it has a backslash")
		}
		if len(why) > 0 {
			return fmt.Sprintf("%s is refused: %s (a path is relative to the evidence file's directory, "+
				"with / between its parts, and stays inside it; the schema forbids %s)", strconv.Quote(s), strings.Join(why, ", "), forbidden)
		}
	}
	return fmt.Sprintf("%s is refused: it matches %s, which is not allowed here", strconv.Quote(s), forbidden)
}

var (
	docsOnce sync.Once
	docs     map[string]any // the embedded schemas, decoded
)

// schemaDoc returns the embedded schema name decoded, nil if it is not.
func schemaDoc(name string) any {
	docsOnce.Do(func() {
		docs = map[string]any{}
		for _, n := range []string{EvidenceFile, EventFile, BlackBoxFile} {
			var d any
			if json.Unmarshal(Source(n), &d) == nil {
				docs[n] = d
			}
		}
	})
	return docs[name]
}

// lookup resolves a JSON pointer (RFC 6901; URL-escaped, as a URI
// fragment may be) in a decoded document; nil when it leads nowhere.
func lookup(doc any, pointer string) any {
	if p, err := url.PathUnescape(pointer); err == nil {
		pointer = p
	}
	if pointer == "" {
		return doc
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}
