package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks"
)

// The committed reference example: a real run's evidence with its logs and
// the report rendered from it. scripts/regen-evidence.sh regenerates all
// three. It lives in evidence/example/, apart from the default output of
// `run` (evidence/u80.json, git-ignored), so a user's run never replaces it.
var (
	committedEvidence = filepath.Join("..", "..", "evidence", "example", "u80.json")
	committedReport   = filepath.Join("..", "..", "reports", "u80.md")
)

// TestCommittedEvidenceVerifies: the committed evidence passes the
// independent verifier (embedded SQL engine, no server needed).
func TestCommittedEvidenceVerifies(t *testing.T) {
	v, err := checks.Verify(t.Context(), committedEvidence, checks.Options{})
	if err != nil {
		t.Fatalf("verify %s: %v", committedEvidence, err)
	}
	if v.Status != checks.Pass {
		var b bytes.Buffer
		_ = checks.WriteText(&b, v)
		t.Fatalf("verify %s: %s\n%s", committedEvidence, v.Status, b.String())
	}
}

// TestCommittedReportUpToDate fails when reports/u80.md is not what
// `report` renders from the committed evidence today.
func TestCommittedReportUpToDate(t *testing.T) {
	got, _, err := renderReport(t.Context(), committedEvidence, "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(committedReport)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date: run scripts/regen-evidence.sh (or orderflow-audit report %s -o %s)",
			committedReport, committedEvidence, committedReport)
	}
}

// TestDefaultOutputIgnored: the default output of `run` is git-ignored
// and is not the committed example, so that the quick start leaves
// `git status` clean.
func TestDefaultOutputIgnored(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/evidence/u80.json", "/evidence/u80/", "/evidence/.u80-*/"} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf(".gitignore lacks %s", want)
		}
	}
	if filepath.Clean(committedEvidence) == filepath.Join("..", "..", "evidence", "u80.json") {
		t.Errorf("the committed example is the default output of run")
	}
}
