package checks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/eventline"
	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// replayBytes runs one log's bytes through the verifier's own reading,
// decoding and model, as one scenario with one log, on this goroutine:
// coverage-guided fuzzing needs a deterministic target (with goroutines the
// fuzzer sees "new" coverage on every run and spends its time minimizing).
func replayBytes(ctx context.Context, data []byte) (evidence.LogStats, *Model, []evidence.LineError, error) {
	m := model.New(nil, []string{"after-publish-before-mark"})
	var probs []evidence.LineError
	st := evidence.ReadLog(ctx, bytes.NewReader(data), eventline.NewDecoder(), readOptions, func(d *evidence.Decoded, e *evidence.LineError) {
		if e != nil {
			probs = append(probs, *e)
			return
		}
		m.Step(&d.Event, Source{Log: "fuzz.jsonl", Line: d.Line, Seq: d.Event.Seq})
	})
	if err := ctx.Err(); err != nil {
		return st, m, probs, err
	}
	m.Finish(st.Truncated > 0)
	for _, s := range sources(m) {
		digestSource(s)
	}
	return st, m, probs, nil
}

func logSeeds(t testing.TB) [][]byte {
	// Small seeds only: under coverage instrumentation a large mutated log
	// costs a lot per run (many lines go to the full validator), and the
	// fuzzer then spends its time minimizing. testdata/fuzz/FuzzReadEvents
	// holds the committed corpus.
	var seeds [][]byte
	paths, _ := filepath.Glob("testdata/u80/u80/*/*.jsonl")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	seeds = append(seeds, []byte{}, []byte("\n\n\n"), []byte("{}\n{"), []byte("\x00\xff\n\"\\u0000\"\n"))
	return seeds
}

// FuzzReadEvents: any bytes as an event log. No panic; the digest and line
// count are those of the bytes; every line is an event, a problem, or the
// cut last line; the model's end state can be digested.
func FuzzReadEvents(f *testing.F) {
	for _, s := range logSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lr, m, probs, err := replayBytes(t.Context(), data)
		if err != nil {
			t.Fatal(err)
		}
		if lr.ReadErr != nil || lr.OpenErr != nil {
			t.Fatalf("read error on in-memory bytes: %v", lr.ReadErr)
		}
		sum := sha256.Sum256(data)
		if lr.SHA256 != hex.EncodeToString(sum[:]) || lr.Lines != int64(bytes.Count(data, []byte{'\n'})) {
			t.Fatalf("digest %s lines %d; want %x and %d", lr.SHA256, lr.Lines, sum, bytes.Count(data, []byte{'\n'}))
		}
		accounted := m.Events() + int64(len(probs))
		if lr.Truncated > 0 {
			accounted++
		}
		if lr.TooLong == 0 && lr.Full <= maxSlowLines && accounted != int64(bytes.Count(data, []byte{'\n'}))+boolInt(lr.Truncated > 0) {
			t.Fatalf("%d events + %d problems + cut=%d for %d lines", m.Events(), len(probs), lr.Truncated, lr.Lines)
		}
		for _, p := range probs {
			if p.Err.Error() == "" || p.Line < 1 {
				t.Fatalf("problem without a message or line: %+v", p)
			}
		}
	})
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// FuzzParseEvidence: any bytes as the evidence file, next to the real
// fixture logs. No panic; an error is always bad input; a verdict is one of
// the three with every reason named.
func FuzzParseEvidence(f *testing.F) {
	fixture, err := os.ReadFile("testdata/u80/u80.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	f.Add([]byte(strings.Replace(string(fixture), `"lines": `, `"lines": 1`, 1)))
	f.Add([]byte(strings.Replace(string(fixture), `"value": "1"`, `"value": "2"`, 1)))
	f.Add(fixture[:len(fixture)/2])
	f.Add([]byte(`{"schema_version":"orderflow-audit/evidence/v1"}`))
	f.Add([]byte(strings.Repeat("[", 2000)))
	f.Add([]byte{})
	dir := filepath.Dir(copyFixture(f, "u80")) // the logs the fuzzed evidence may name
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "fuzz.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := Verify(context.Background(), p, Options{Workers: 1})
		if err != nil {
			if !errors.Is(err, evidence.ErrBadInput) {
				t.Fatalf("an error that is not bad input: %v", err)
			}
			return
		}
		switch v.Status {
		case Pass, Fail, Inconclusive:
		default:
			t.Fatalf("status %q", v.Status)
		}
		for _, r := range v.Reasons {
			if r.Rule == "" || r.Message == "" || (r.Status != Fail && r.Status != Inconclusive) {
				t.Fatalf("reason %+v", r)
			}
		}
	})
}

func TestReplayBytesSeeds(t *testing.T) {
	for _, s := range logSeeds(t) {
		if _, _, _, err := replayBytes(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriteFuzzCorpus writes the committed seed corpora under
// testdata/fuzz (run with OFA_WRITE_CORPUS=1 after changing the seeds);
// FuzzFastEvent's are checks/eventline's.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("OFA_WRITE_CORPUS") == "" {
		t.Skip("set OFA_WRITE_CORPUS=1 to rewrite testdata/fuzz")
	}
	write := func(target, name string, data []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	paths, _ := filepath.Glob("testdata/u80/u80/*/*.jsonl")
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		name := strings.TrimSuffix(strings.ReplaceAll(strings.TrimPrefix(p, "testdata/u80/u80/"), "/", "-"), ".jsonl")
		write("FuzzReadEvents", name, b)
		write("FuzzReadEvents", name+"-cut", b[:len(b)*2/3])
	}
	write("FuzzReadEvents", "nested", []byte(strings.Repeat("[", 2000)+"\n"))
	write("FuzzReadEvents", "garbage", []byte("\x00\xff{\"seq\":1}\n{}\n\"\\ud800\"\n"))
	fixture, _ := os.ReadFile("testdata/u80/u80.json")
	write("FuzzParseEvidence", "u80", fixture)
	write("FuzzParseEvidence", "u80-half", fixture[:len(fixture)/2])
	write("FuzzParseEvidence", "wrong-lines", []byte(strings.Replace(string(fixture), `"lines": `, `"lines": 1`, 1)))
	write("FuzzParseEvidence", "minimal", []byte(`{"schema_version":"orderflow-audit/evidence/v1"}`))
	write("FuzzParseEvidence", "nested", []byte(strings.Repeat("[", 2000)))
}
