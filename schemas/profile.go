package schemas

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The profile of a pipeline audited as a black box (docs/blackbox.md) has
// its own schema, compiled apart from the evidence's: a profile is read by
// evidence/profile from YAML, which reports each problem at its line.

//go:embed profile.schema.json
var profileSchema []byte

// ProfileFile is the name of the embedded profile schema (Source finds it
// through ProfileSource, as the evidence schemas are found through Source).
const ProfileFile = "profile.schema.json"

// ProfileSource returns the raw text of the profile schema.
func ProfileSource() []byte { return profileSchema }

var (
	profileOnce sync.Once
	profile     *jsonschema.Schema
	// profileDoc is the schema as a generic document, so that a pattern a
	// value fails can be explained by its "description" rather than shown
	// as a regular expression to a user who wrote a column name.
	profileDoc  any
	profileInit error
)

func compileProfile() {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	if err := c.AddResource(ProfileFile, bytes.NewReader(profileSchema)); err != nil {
		profileInit = fmt.Errorf("load schema %s: %w", ProfileFile, err)
		return
	}
	if profile, profileInit = c.Compile(ProfileFile); profileInit != nil {
		return
	}
	if err := json.Unmarshal(profileSchema, &profileDoc); err != nil {
		profileInit = fmt.Errorf("load schema %s: %w", ProfileFile, err)
	}
}

// ValidateProfile validates a profile already decoded into generic values
// (map[string]any, []any, string, bool, nil and json.Number or Go integer
// and float types). It returns nil, an *Error listing every violation
// (each at a JSON pointer into doc), or an error when the schema itself
// could not be compiled. A value that fails a pattern is reported as
// "want <what the pattern stands for>", never as the pattern.
func ValidateProfile(doc any) error {
	profileOnce.Do(compileProfile)
	if profileInit != nil {
		return profileInit
	}
	err := profile.Validate(doc)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	return &Error{Schema: ProfileFile, Problems: profileLeaves(ve)}
}

// profileLeaves keeps the leaf causes, as flatten does, rewriting pattern
// failures with the description of the schema node that holds the pattern.
func profileLeaves(ve *jsonschema.ValidationError) []Problem {
	seen := map[Problem]bool{}
	var out []Problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p := Problem{Location: e.InstanceLocation, Message: e.Message}
		if strings.HasSuffix(e.KeywordLocation, "/pattern") {
			if d := describe(e.AbsoluteKeywordLocation); d != "" {
				p.Message = "want " + d
			}
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Location < out[j].Location })
	return out
}

// describe returns the "description" of the schema node whose keyword is
// at abs ("profile.schema.json#/$defs/field/pattern"), or "".
func describe(abs string) string {
	_, ptr, ok := strings.Cut(abs, "#")
	if !ok {
		return ""
	}
	ptr = strings.TrimSuffix(ptr, "/pattern")
	node := profileDoc
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if seg == "" {
			continue
		}
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		m, ok := node.(map[string]any)
		if !ok {
			return ""
		}
		node = m[seg]
	}
	m, _ := node.(map[string]any)
	d, _ := m["description"].(string)
	return d
}
