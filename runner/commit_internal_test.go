package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// stagedBundle lays out what a run stages: root/u80/s/scenario.jsonl
// holding line, and returns root.
func stagedBundle(t *testing.T, dir, line string) string {
	t.Helper()
	root, err := os.MkdirTemp(dir, ".u80-r-")
	if err != nil {
		t.Fatal(err)
	}
	writeLog(t, filepath.Join(root, "u80"), line)
	return root
}

func writeLog(t *testing.T, logs, line string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(logs, "s"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "s", "scenario.jsonl"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readOr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestCommitBundle: commitBundle puts the staged logs and evidence file in
// place, with and without RENAME_EXCHANGE, and removes the staging
// directory (with the previous logs); when the evidence file cannot be put
// in place, the previous logs are put back and nothing changes.
func TestCommitBundle(t *testing.T) {
	// Cut off (no newline): the start of an event is an event log.
	const oldLine, newLine = `{"seq":1,"old"`, `{"seq":1,"new"`
	for _, tc := range []struct {
		name       string
		noExchange bool
		blockOut   bool // the evidence file's rename fails
	}{{"exchange", false, false}, {"without exchange", true, false},
		{"rename fails", false, true}, {"rename fails without exchange", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noExchange {
				saved := exchange
				exchange = func(a, b string) error { return errNoExchange }
				defer func() { exchange = saved }()
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "u80.json")
			writeLog(t, filepath.Join(dir, "u80"), oldLine)
			oldOut := "previous evidence"
			if tc.blockOut {
				// A directory where the evidence file goes: renaming a
				// file over it fails (what CheckOut refuses up front).
				if err := os.MkdirAll(filepath.Join(out, "x"), 0o755); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(out, []byte(oldOut), 0o644); err != nil {
				t.Fatal(err)
			}
			root := stagedBundle(t, dir, newLine)
			err := commitBundle(root, out, []byte("new evidence"))
			log := readOr(filepath.Join(dir, "u80", "s", "scenario.jsonl"))
			if tc.blockOut {
				if err == nil {
					t.Fatal("commitBundle over a directory succeeded")
				}
				if log != oldLine {
					t.Errorf("the previous log is now %q; want it back, %q", log, oldLine)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := readOr(out); got != "new evidence" {
				t.Errorf("evidence file %q", got)
			}
			if log != newLine {
				t.Errorf("log %q; want %q", log, newLine)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("staging directory left (stat: %v)", err)
			}
		})
	}
}

// TestStaleStageLayouts: removeStaleStages removes an old staging
// directory of a killed run as staged now (u80/ with logs, u80.json, and
// u80.old/ when it was killed mid-swap) or before (logs alone), and leaves
// one that holds anything else or is fresh.
func TestStaleStageLayouts(t *testing.T) {
	dir := t.TempDir()
	evidenceFile := func(root string) {
		b, err := os.ReadFile(filepath.Join("..", "evidence", "example", "u80.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "u80.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	whole := stagedBundle(t, dir, `{"seq":1`)
	evidenceFile(whole)
	writeLog(t, filepath.Join(whole, "u80.old"), `{"seq":1`)
	logsOnly := filepath.Join(dir, ".u80-before-1")
	writeLog(t, logsOnly, `{"seq":1`)
	foreign := stagedBundle(t, dir, `{"seq":1`)
	if err := os.WriteFile(filepath.Join(foreign, "u80.json"), []byte("not ours"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := stagedBundle(t, dir, `{"seq":1`)
	now := time.Now()
	past := now.Add(-2 * staleStage)
	for _, d := range []string{whole, logsOnly, foreign} {
		if err := os.Chtimes(d, past, past); err != nil {
			t.Fatal(err)
		}
	}
	removeStaleStages(dir, "u80", now, slog.New(slog.DiscardHandler))
	for d, wantGone := range map[string]bool{whole: true, logsOnly: true, foreign: false, fresh: false} {
		if _, err := os.Stat(d); os.IsNotExist(err) != wantGone {
			t.Errorf("%s: removed %v; want %v", filepath.Base(d), os.IsNotExist(err), wantGone)
		}
	}
}

// TestLockOut: a second lock on the same --out is refused (ErrOutBusy,
// exit 2) naming the holder's pid; a lock file that a killed run left is
// taken; unlocking removes the file, and the --out can be locked again.
func TestLockOut(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sub", "u80.json")
	lock := filepath.Join(filepath.Dir(out), ".u80.lock")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, []byte("99999\n"), 0o644); err != nil { // a killed run's
		t.Fatal(err)
	}
	unlock, err := lockOut(out)
	if err != nil {
		t.Fatalf("lockOut over a stale lock file: %v", err)
	}
	_, err = lockOut(out)
	if !errors.Is(err, ErrOutBusy) || !errors.Is(err, evidence.ErrBadOutput) ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("second lockOut = %v; want ErrOutBusy naming pid %d", err, os.Getpid())
	}
	unlock()
	if _, err := os.Lstat(lock); !os.IsNotExist(err) {
		t.Errorf("lock file left after unlock (lstat: %v)", err)
	}
	unlock, err = lockOut(out)
	if err != nil {
		t.Fatalf("lockOut after unlock: %v", err)
	}
	unlock()
}

// TestPrivilegeNeedsNameScenarios: every scenario privilegeNeeds names
// exists (a renamed one would silently lose its preflight).
func TestPrivilegeNeedsNameScenarios(t *testing.T) {
	for id := range privilegeNeeds {
		if _, err := Select([]string{id}); err != nil {
			t.Errorf("privilegeNeeds[%q]: %v", id, err)
		}
	}
}
