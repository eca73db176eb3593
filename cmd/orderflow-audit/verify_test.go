package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
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
