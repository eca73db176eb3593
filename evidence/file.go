package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// MaxFileBytes bounds an evidence file for readers.
const MaxFileBytes = 64 << 20

// ErrBadInput marks an evidence file that cannot be read as evidence: not
// readable, too large, not JSON, the wrong schema version or failing the
// schema. The CLI maps it to exit code 2.
var ErrBadInput = errors.New("bad evidence input")

// Marshal encodes ev as indented JSON with a trailing newline and validates
// the result against the evidence schema.
func Marshal(ev *Evidence) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(ev); err != nil {
		return nil, fmt.Errorf("encode evidence: %w", err)
	}
	if err := schemas.ValidateEvidenceJSON(buf.Bytes()); err != nil {
		return nil, fmt.Errorf("evidence %w", err)
	}
	return buf.Bytes(), nil
}

// WriteFile validates ev and writes it atomically: a temporary file in the
// same directory, synced, then renamed over path. A crash leaves either the
// old file or the new one, never half of one.
func WriteFile(path string, ev *Evidence) error {
	data, err := Marshal(ev)
	if err != nil {
		return err
	}
	return WriteAtomic(path, data)
}

// WriteAtomic writes data to path through a synced temporary file and a
// rename.
func WriteAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ReadFile reads, schema-validates and decodes an evidence file. Every
// failure wraps ErrBadInput; a schema failure also wraps *schemas.Error
// with every problem.
func ReadFile(path string) (*Evidence, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		switch {
		case st.IsDir():
			return nil, nil, fmt.Errorf("%w: %s is a directory, not an evidence file", ErrBadInput, path)
		case st.Mode().IsRegular() && st.Size() > MaxFileBytes:
			return nil, nil, fmt.Errorf("%w: %s is larger than %d MiB", ErrBadInput, path, MaxFileBytes>>20)
		}
	}
	raw, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: read %s: %v", ErrBadInput, path, err)
	}
	if len(raw) > MaxFileBytes {
		return nil, nil, fmt.Errorf("%w: %s is larger than %d MiB", ErrBadInput, path, MaxFileBytes>>20)
	}
	ev, err := Parse(raw)
	if err != nil {
		return nil, raw, fmt.Errorf("%s: %w", path, err)
	}
	return ev, raw, nil
}

// Parse validates raw against the schema and decodes it strictly.
func Parse(raw []byte) (*Evidence, error) {
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v)
		return nil, fmt.Errorf("%w: not JSON: %v", ErrBadInput, err)
	}
	if t := bytes.TrimLeft(raw, " \t\r\n"); t[0] != '{' {
		return nil, fmt.Errorf("%w: not an evidence document: the top level is %s, want an object", ErrBadInput, jsonKind(t[0]))
	}
	var probe struct {
		SchemaVersion any `json:"schema_version"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("%w: not an evidence document: %v", ErrBadInput, err)
	}
	switch {
	case probe.SchemaVersion == nil:
		return nil, fmt.Errorf("%w: no schema_version: not an orderflow-audit evidence file (want %q)", ErrBadInput, SchemaVersion)
	case probe.SchemaVersion != SchemaVersion:
		return nil, fmt.Errorf("%w: schema_version %v, want %q", ErrBadInput, probe.SchemaVersion, SchemaVersion)
	}
	if err := schemas.ValidateEvidenceJSON(raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	var ev Evidence
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return nil, fmt.Errorf("%w: decode: %v", ErrBadInput, err)
	}
	return &ev, nil
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
