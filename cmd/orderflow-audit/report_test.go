package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/reports"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// fixtureEvidence is the hand-made evidence of the reports package; it is
// realistic enough to verify, and needs no server.
const fixtureEvidence = "../../reports/testdata/u80/evidence.json"

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "not.json")
	if err := os.WriteFile(notJSON, []byte("this is not JSON\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badSchema := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(badSchema, []byte(`{"schema_version":"orderflow-audit/evidence/v1","tool":{"name":"x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.md")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no argument", []string{"report"}, "want exactly one evidence file"},
		{"two arguments", []string{"report", "a.json", "b.json"}, "want exactly one evidence file"},
		{"unknown flag", []string{"report", "--nope", fixtureEvidence}, "flag provided but not defined"},
		{"missing file", []string{"report", "-o", out, filepath.Join(dir, "missing.json")}, "missing.json"},
		{"not JSON", []string{"report", "-o", out, notJSON}, "not JSON"},
		{"fails schema", []string{"report", "-o", out, badSchema}, "schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d; want %d (stderr %q)", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q lacks %q", stderr, tt.want)
			}
			if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
				t.Errorf("stderr has a stack trace:\n%s", stderr)
			}
			if stdout != "" && !strings.HasPrefix(tt.name, "unknown") {
				t.Errorf("stdout not empty on bad input:\n%s", stdout)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was written on bad input (stat: %v)", out, err)
			}
		})
	}
}

// wantExit is the exit code of report for a verdict.
func wantExit(s checks.Status) int {
	switch s {
	case checks.Pass:
		return exitOK
	case checks.Inconclusive:
		return exitInconclusive
	}
	return exitFail
}

// checkReport runs report on path to stdout and to a file, and checks that
// both carry the same Markdown with the verifier's verdict on top.
func checkReport(t *testing.T, path string) string {
	t.Helper()
	v, err := checks.Verify(t.Context(), path, checks.Options{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	code, stdout, stderr := runCLI(t, "report", path)
	if code != wantExit(v.Status) {
		t.Fatalf("exit %d for verdict %s; want %d (stderr %q)", code, v.Status, wantExit(v.Status), stderr)
	}
	for _, h := range []string{"## Scenarios", "## Boundaries", "## Invariants",
		"## Proof boundary", "## Run and environment", "## Scenario sections"} {
		if !strings.Contains(stdout, "\n"+h+"\n") {
			t.Errorf("report lacks %q", h)
		}
	}
	if !strings.HasPrefix(stdout, reports.Marker+"\n# "+string(v.Status)+": ") {
		t.Errorf("report title does not state the verdict %s:\n%.200s", v.Status, stdout)
	}
	if caution := strings.Contains(stdout, "[!CAUTION]"); caution != (v.Status != checks.Pass) {
		t.Errorf("verdict %s but caution banner shown = %v", v.Status, caution)
	}

	out := filepath.Join(t.TempDir(), "r.md")
	code, stdout2, stderr := runCLI(t, "report", "-o", out, path)
	if code != wantExit(v.Status) || stdout2 != "" {
		t.Fatalf("-o: exit %d, stdout %q, stderr %q", code, stdout2, stderr)
	}
	if !strings.Contains(stderr, "report written to "+out) {
		t.Errorf("-o: stderr %q", stderr)
	}
	written, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(written) != stdout {
		t.Errorf("-o wrote something else than stdout shows")
	}
	return stdout
}

func TestReportFixture(t *testing.T) {
	md := checkReport(t, fixtureEvidence)
	if !strings.Contains(md, ": the orderflow-audit reference pipeline, suites U79, U80 and EXT, run 20250301t100000z-7f3a\n") {
		t.Errorf("report of another run:\n%.300s", md)
	}
}

func TestReportOfARealRun(t *testing.T) {
	infratest.Server(t)
	infratest.RequireMariaDB(t) // run starts a private server
	path := filepath.Join(t.TempDir(), "u80.json")
	code, _, stderr := runCLI(t, "run", "--scenarios", "txBoundaryRollback,sendBeforeMarkCrash", "--out", path)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	md := checkReport(t, path)
	for _, want := range []string{"U80 sendBeforeMarkCrash=PASS deliveries=2 businessEffects=1 oldTokenCas=0 state=SENT",
		"0 rows, stale", "NOT RUN: kill -9 of an actor"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestReportUnavailableVerificationDatabase(t *testing.T) {
	code, stdout, stderr := runCLI(t, "report", "--mysql-dsn", "app:s3cret-pw@tcp(127.0.0.1:1)/", fixtureEvidence)
	if code != exitUnavailable {
		t.Errorf("exit %d; want %d (stderr %q)", code, exitUnavailable, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout not empty: %q", stdout)
	}
	if strings.Contains(stderr, "s3cret-pw") {
		t.Errorf("stderr shows the password: %q", stderr)
	}
}

// TestReportHostileLogs: a log symlinked out of the evidence directory is
// refused (never read into the report) and a garbage line in a log is
// named; the report is still rendered under the verifier's verdict.
func TestReportHostileLogs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	if err := os.CopyFS(dir, os.DirFS(filepath.Dir(fixtureEvidence))); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(dir), "secret.jsonl")
	if err := os.WriteFile(outside, []byte(`{"seq":1,"time":"2025-03-01T10:00:00Z","run_id":"r","scenario":"s","actor":"x","kind":"fault","point":"SECRET-OUTSIDE","detail":"d"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	relay := filepath.Join(dir, "logs", "normalChain", "relay-A.jsonl")
	if err := os.Remove(relay); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, relay); err != nil {
		t.Fatal(err)
	}
	orders := filepath.Join(dir, "logs", "offsetReplay", "orders.jsonl")
	data, err := os.ReadFile(orders)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orders, append([]byte("not an event\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runCLI(t, "report", filepath.Join(dir, "evidence.json"))
	if code != exitFail {
		t.Errorf("exit %d; want %d (stderr %q)", code, exitFail, stderr)
	}
	for _, want := range []string{
		"- log problem: logs/normalChain/relay-A.jsonl: not read: refused: open logs/normalChain/relay-A.jsonl: is a symbolic link, which the verifier does not follow inside a bundle",
		"- log problem: line 1 of logs/offsetReplay/orders.jsonl is not a valid event: invalid character",
		"1 line of the logs is not a valid event (named below) and is not drawn",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(stdout, "SECRET-OUTSIDE") {
		t.Errorf("report shows the content of a file outside the evidence directory")
	}
}
