package evidence_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// A buffered Log writes nothing until its buffer fills, Flush or Close;
// then every line, in seq order. An unbuffered one writes each line at
// once.
func TestLogBuffer(t *testing.T) {
	var w bytes.Buffer
	l := evidence.NewLog(&w, "run", "sc", nil)
	if err := l.Emit(evidence.Event{Actor: "a", Kind: evidence.KindClaim}); err != nil {
		t.Fatal(err)
	}
	if bytes.Count(w.Bytes(), []byte{'\n'}) != 1 {
		t.Fatalf("unbuffered log wrote %q; want the line at once", w.String())
	}
	if err := l.Buffer(1 << 16); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := l.Emit(evidence.Event{Actor: "a", Kind: evidence.KindMark}); err != nil {
			t.Fatal(err)
		}
	}
	if n := bytes.Count(w.Bytes(), []byte{'\n'}); n != 1 {
		t.Fatalf("buffered log wrote %d lines before Flush; want 1", n)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(w.Bytes(), []byte{'\n'}); n != 4 {
		t.Fatalf("after Flush %d lines; want 4", n)
	}

	path := filepath.Join(t.TempDir(), "a.jsonl")
	f, err := evidence.CreateLog(path, "run", "sc")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Buffer(1 << 16); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := f.Emit(evidence.Event{Actor: "a", Kind: evidence.KindClaim}); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Fatalf("buffered file log wrote %d bytes before Close; want 0", len(b))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	es, err := evidence.ReadEvents(path)
	if err != nil || len(es) != 5 || es[4].Seq != 5 {
		t.Fatalf("after Close: %d events, %v; want 5 with seq 1..5", len(es), err)
	}
}
