package schemas

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The evidence of a black-box audit (docs/blackbox.md) has a schema of its
// own, told apart from the reference pipeline's evidence by its
// schema_version. It refers to evidence.schema.json for what the two
// share (the tool, a witness, a file with its digest), so both are
// compiled together; evidence.schema.json is not changed by it.

//go:embed blackbox.schema.json
var blackBoxSchema []byte

// BlackBoxFile is the name of the embedded black-box evidence schema.
const BlackBoxFile = "blackbox.schema.json"

// The schemas' $ids: the black-box schema's relative references resolve
// against its own, so the evidence schema must be added under its $id.
const (
	evidenceID = "https://orderflow-audit.invalid/schemas/" + EvidenceFile
	blackBoxID = "https://orderflow-audit.invalid/schemas/" + BlackBoxFile
)

var (
	blackBoxOnce sync.Once
	blackBox     *jsonschema.Schema
	blackBoxInit error
)

func compileBlackBox() {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	for id, src := range map[string][]byte{evidenceID: evidenceSchema, blackBoxID: blackBoxSchema} {
		if err := c.AddResource(id, bytes.NewReader(src)); err != nil {
			blackBoxInit = fmt.Errorf("load schema %s: %w", id, err)
			return
		}
	}
	blackBox, blackBoxInit = c.Compile(blackBoxID)
}

// ValidateBlackBoxJSON validates the raw evidence file of a black-box
// audit (numbers kept exact). It returns nil, an *Error listing every
// violation, or an error for what is not one JSON document.
func ValidateBlackBoxJSON(raw []byte) error {
	doc, err := decodeOne(raw)
	if err != nil {
		return err
	}
	blackBoxOnce.Do(compileBlackBox)
	if blackBoxInit != nil {
		return blackBoxInit
	}
	err = blackBox.Validate(doc)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	return &Error{Schema: BlackBoxFile, Problems: flatten(BlackBoxFile, doc, ve)}
}
