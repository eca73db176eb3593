// Package modeltest reads the recorded histories of the replay model
// (checks/model/testdata/histories) for the tests of the model and of the
// checker.
package modeltest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Base is the time of a history's first event; events without a "time"
// follow it a millisecond apart.
var Base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// History is one recorded history: a directory with events.jsonl, want
// (the rule ids the model must report, one per violation) and an
// optional fault_points (the points the scenario declares).
type History struct {
	Name        string // the directory's name
	Events      []evidence.Event
	FaultPoints []string
	Want        []string
}

// Histories returns the names of the history directories below root, in
// order.
func Histories(t testing.TB, root string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(root, "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no histories in %s: %v", root, err)
	}
	return dirs
}

// Load reads the history in dir.
func Load(t testing.TB, dir string) History {
	t.Helper()
	return History{
		Name:        filepath.Base(dir),
		Events:      Events(t, filepath.Join(dir, "events.jsonl")),
		FaultPoints: list(t, filepath.Join(dir, "fault_points")),
		Want:        list(t, filepath.Join(dir, "want")),
	}
}

// Events reads a hand-written history: one event per line, seq and time
// filled in when absent.
func Events(t testing.TB, path string) []evidence.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []evidence.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e evidence.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		if e.Seq == 0 {
			e.Seq = int64(len(out) + 1)
		}
		if e.Time.IsZero() {
			e.Time = Base.Add(time.Duration(len(out)) * time.Millisecond)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// list reads a file of one item per line ('#' starts a comment line); a
// missing file is an empty list.
func list(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}
