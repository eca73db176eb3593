package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/reports"
)

// verifyFixture copies a real-run fixture of checks/testdata into a
// temporary directory (recomputing the derived boundary and proof tables
// if evidence/proof.go words them differently now), lets edit change it,
// records the logs' digests again, and returns the evidence path.
func verifyFixture(t *testing.T, name string, edit func(dir string)) string {
	t.Helper()
	src := filepath.Join("..", "..", "checks", "testdata", name)
	dst := t.TempDir()
	err := os.CopyFS(dst, os.DirFS(src))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dst, "u80.json")
	if edit != nil {
		edit(dst)
	}
	ev, _, err := evidence.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ev.Scenarios {
		for j := range ev.Scenarios[i].Logs {
			ref := &ev.Scenarios[i].Logs[j]
			if ref.SHA256, ref.Lines, err = evidence.FileDigest(filepath.Join(dst, ref.Path)); err != nil {
				t.Fatal(err)
			}
		}
	}
	ev.Boundaries = evidence.ComputeBoundaries(ev.Scenarios)
	ev.ProofBoundary = evidence.ComputeProofBoundary(ev)
	if err := evidence.WriteFile(path, ev); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestVerifyCommand(t *testing.T) {
	clean := verifyFixture(t, "u80", nil)
	planted := verifyFixture(t, filepath.Join("planted", "mark-without-token"), nil)
	cut := verifyFixture(t, "u80", func(dir string) {
		p := filepath.Join(dir, "u80", "normalChain", "scenario.jsonl")
		b, _ := os.ReadFile(p)
		os.WriteFile(p, b[:len(b)-40], 0o644) // the last line loses its end
	})
	notJSON := filepath.Join(t.TempDir(), "u80.json")
	os.WriteFile(notJSON, []byte("hello"), 0o644)
	badSchema := filepath.Join(t.TempDir(), "u80.json")
	raw, _ := os.ReadFile(clean)
	os.WriteFile(badSchema, []byte(strings.Replace(strings.Replace(string(raw), `"MariaDB"`, `"Oracle"`, 1), `"seed": 1`, `"seed": "x"`, 1)), 0o644)

	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{"pass", []string{"verify", clean}, exitOK, "orderflow-audit verify: PASS", ""},
		{"flags after the file", []string{"verify", clean, "--json"}, exitOK, `"status": "PASS"`, ""},
		{"planted bug", []string{"verify", planted}, exitFail, "[stale-token-mark]", ""},
		{"cut log", []string{"verify", cut}, exitInconclusive, "[log-truncated]", ""},
		{"not JSON", []string{"verify", notJSON}, exitUsage, "", "not JSON"},
		{"schema", []string{"verify", badSchema}, exitUsage, "", "  /run/seed:"},
		{"missing", []string{"verify", filepath.Join(t.TempDir(), "nope.json")}, exitUsage, "", "no such file"},
		{"no file", []string{"verify"}, exitUsage, "", "want exactly one evidence file"},
		{"two files", []string{"verify", clean, clean}, exitUsage, "", "want exactly one evidence file"},
		{"bad DSN", []string{"verify", "--mysql-dsn", "not a dsn", clean}, exitUsage, "", "--mysql-dsn"},
		{"server down", []string{"verify", "--mysql-dsn", "root:hunter2@tcp(127.0.0.1:1)/", clean}, exitUnavailable, "", "unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.wantStdout) || !strings.Contains(stderr, tc.wantStderr) {
				t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, bad := range []string{"goroutine ", "panic:", "hunter2"} {
				if strings.Contains(stdout+stderr, bad) {
					t.Errorf("output contains %q:\n%s%s", bad, stdout, stderr)
				}
			}
		})
	}
	// With --json, bad input (exit 2) still gives machine readers a JSON
	// object on stdout; the message stays on stderr for people.
	for _, tc := range []struct {
		name, file, extra, want, problem string
	}{
		{"not JSON", notJSON, "", "not JSON", ""},
		{"schema", badSchema, "", "/run/seed", "/run/seed"},
		{"missing", filepath.Join(t.TempDir(), "nope.json"), "", "no such file", ""},
		{"two files", clean, clean, "want exactly one evidence file", ""},
	} {
		t.Run("json bad input "+tc.name, func(t *testing.T) {
			args := []string{"verify", "--json", tc.file}
			if tc.extra != "" {
				args = append(args, tc.extra)
			}
			code, stdout, stderr := runCLI(t, args...)
			var out struct {
				Status   string `json:"status"`
				Error    string `json:"error"`
				Problems []struct {
					Location, Message string
				} `json:"problems"`
			}
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatalf("exit %d; stdout is not JSON (%v):\n%s", code, err, stdout)
			}
			if code != exitUsage || out.Status != "BAD_INPUT" || !strings.Contains(out.Error, tc.want) || stderr == "" {
				t.Fatalf("exit %d, stdout %+v, stderr %q; want exit 2, BAD_INPUT with %q and the message on stderr too", code, out, stderr, tc.want)
			}
			if tc.problem != "" && !slices.ContainsFunc(out.Problems, func(p struct{ Location, Message string }) bool {
				return p.Location == tc.problem
			}) {
				t.Errorf("problems %+v lack %s", out.Problems, tc.problem)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "verify", "--json", planted)
		var v struct {
			Status  string `json:"status"`
			Planted string `json:"planted"`
			Reasons []struct {
				Rule, Status, Scenario, Log string
				Seq                         int64
			} `json:"reasons"`
		}
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatalf("--json output is not JSON: %v\n%s", err, stdout)
		}
		if code != exitFail || v.Status != "FAIL" || v.Planted != "mark-without-token" || len(v.Reasons) == 0 {
			t.Fatalf("exit %d, verdict %+v", code, v)
		}
	})
}

// TestVerifyUnwitnessed: evidence whose witnesses are missing is at best
// INCONCLUSIVE (exit 4, witness-missing); --allow-unwitnessed lets it pass
// and says "unwitnessed" in the verdict line, --json and the report.
func TestVerifyUnwitnessed(t *testing.T) {
	path := verifyFixture(t, "u80", func(dir string) {
		p := filepath.Join(dir, "u80.json")
		ev, _, err := evidence.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ev.Witness = &evidence.Witness{Missing: []string{"database: the binary log could not be captured", "broker: the broker was lost"}}
		if err := evidence.WriteFile(p, ev); err != nil {
			t.Fatal(err)
		}
	})
	code, stdout, _ := runCLI(t, "verify", path)
	if code != exitInconclusive || !strings.HasPrefix(stdout, "orderflow-audit verify: INCONCLUSIVE for the orderflow-audit reference pipeline, suite U80, run ") || !strings.Contains(stdout, "[witness-missing]") {
		t.Fatalf("exit %d:\n%s\nwant 4, INCONCLUSIVE by witness-missing", code, stdout)
	}
	code, stdout, _ = runCLI(t, "verify", "--allow-unwitnessed", path)
	if code != exitOK || !strings.HasPrefix(stdout, "orderflow-audit verify: PASS (unwitnessed) for the orderflow-audit reference pipeline, suite U80, run ") ||
		!strings.Contains(stdout, "unwitnessed database: the binary log could not be captured") || strings.Contains(stdout, "witness-missing") {
		t.Fatalf("--allow-unwitnessed: exit %d:\n%s\nwant 0, PASS (unwitnessed) listing what", code, stdout)
	}
	code, stdout, _ = runCLI(t, "verify", "--allow-unwitnessed", "--json", path)
	var v struct {
		Status      string   `json:"status"`
		Unwitnessed []string `json:"unwitnessed"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != exitOK || v.Status != "PASS" || len(v.Unwitnessed) != 2 {
		t.Fatalf("--json: exit %d, %+v (%v)", code, v, err)
	}
	code, stdout, _ = runCLI(t, "report", "--allow-unwitnessed", path)
	if code != exitOK || !strings.HasPrefix(stdout, reports.Marker+"\n# PASS (unwitnessed): ") || !strings.Contains(stdout, "unwitnessed: what the actors say about the broker") {
		t.Fatalf("report --allow-unwitnessed: exit %d:\n%.600s", code, stdout)
	}
}

// TestVerifyOlderSchema: evidence of schema v1 (before witnesses) is bad
// input with a message that says what to do.
func TestVerifyOlderSchema(t *testing.T) {
	path := verifyFixture(t, "u80", nil)
	b, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(b), evidence.SchemaVersion, "orderflow-audit/evidence/v1", 1)), 0o644)
	code, _, stderr := runCLI(t, "verify", path)
	for _, want := range []string{"orderflow-audit/evidence/v1 is an older evidence format", "before runs carried witnesses", "orderflow-audit run"} {
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
		}
	}
}
