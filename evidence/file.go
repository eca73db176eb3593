package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"

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
// rename. A failure wraps ErrBadOutput.
func WriteAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return BadOutputf("write %s: %w", path, err)
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
		return BadOutputf("write %s: %w", path, err)
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
//
// The file is opened without blocking (a FIFO would block an ordinary open
// until a writer came) and must be a regular file: a FIFO, a device or a
// socket is refused before a byte is read. (The verifier reads a bundle
// through evidence/bundle, which also refuses hard links and everything
// beneath the evidence file that is not a plain regular file.)
func ReadFile(path string) (*Evidence, []byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: stat %s: %v", ErrBadInput, path, err)
	}
	switch {
	case st.IsDir():
		return nil, nil, fmt.Errorf("%w: %s is a directory, not an evidence file", ErrBadInput, path)
	case !st.Mode().IsRegular():
		return nil, nil, fmt.Errorf("%w: %s is not a regular file (%s), not an evidence file", ErrBadInput, path, "a "+FileTypeName(st.Mode()))
	case st.Size() > MaxFileBytes:
		return nil, nil, fmt.Errorf("%w: %s is larger than %d MiB", ErrBadInput, path, MaxFileBytes>>20)
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

// FileTypeName names a file's type for a message ("FIFO (named pipe)",
// "character device", ...); the bundle gate names refused files with it
// too.
func FileTypeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
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
	case probe.SchemaVersion == BlackBoxSchemaVersion:
		return nil, fmt.Errorf("%w: schema_version %v is the evidence of a black-box audit: `orderflow-audit verify` and `report` read it; "+
			"this reads the reference pipeline's evidence (%q) only", ErrBadInput, probe.SchemaVersion, SchemaVersion)
	case probe.SchemaVersion != SchemaVersion:
		if why, ok := schemaVersionsBefore[fmt.Sprint(probe.SchemaVersion)]; ok {
			return nil, fmt.Errorf("%w: schema_version %v is an older evidence format, %s; this version of orderflow-audit reads %q only: "+
				"run `orderflow-audit run` again with it to get witnessed evidence", ErrBadInput, probe.SchemaVersion, why, SchemaVersion)
		}
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

// ErrBadOutput marks an output path that must not or cannot be written: a
// file that is not ours to replace, a directory that cannot be written. The
// CLI maps it to exit code 2.
var ErrBadOutput = errors.New("bad output path")

// BadOutputf returns an error that wraps ErrBadOutput and whose message is
// the formatted text alone.
func BadOutputf(format string, args ...any) error {
	return &markedError{err: fmt.Errorf(format, args...), mark: ErrBadOutput}
}

// markedError carries a sentinel for errors.Is without repeating its text.
type markedError struct {
	err  error
	mark error
}

func (e *markedError) Error() string   { return e.err.Error() }
func (e *markedError) Unwrap() []error { return []error{e.err, e.mark} }

// evidenceHead is how every evidence file this code writes begins (Marshal
// puts schema_version first). Only such a file is replaced by a new one.
var evidenceHead = regexp.MustCompile(`^\{\s*"schema_version"\s*:\s*"orderflow-audit/evidence/`)

// IsEvidenceFile tells whether path is a regular file (not a symlink)
// that begins like an evidence file of this tool. It reads 4 KiB at most.
func IsEvidenceFile(path string) (bool, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() {
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return evidenceHead.Match(head[:n]), nil
}

// CheckWritableDir checks, without leaving anything behind, that files can
// be created in dir: in dir itself when it exists, else in its nearest
// existing ancestor (where the missing directories would be created). It
// tries for real (creates and removes a temporary directory), so that
// read-only file systems, permissions, ACLs and root are all accounted
// for. A failure wraps ErrBadOutput and names the directory.
func CheckWritableDir(dir string) error {
	if dir == "" {
		dir = "."
	}
	probe := dir
	for {
		st, err := os.Stat(probe)
		if err == nil {
			if !st.IsDir() {
				return BadOutputf("%s is not a directory", probe)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return BadOutputf("%v", err)
		}
		parent := filepath.Dir(probe)
		if parent == probe {
			return BadOutputf("%v", err)
		}
		probe = parent
	}
	tmp, err := os.MkdirTemp(probe, ".ofa-write-probe-")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the probe's own name says nothing to the user
		}
		if probe != dir {
			return BadOutputf("cannot create %s: %v", dir, err)
		}
		return BadOutputf("cannot write in %s: %v", dir, err)
	}
	return os.Remove(tmp)
}
