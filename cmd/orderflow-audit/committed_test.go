package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks"
)

// The committed reference example: a real run's evidence with its logs and
// the report rendered from it. scripts/regen-evidence.sh regenerates all
// three.
var (
	committedEvidence = filepath.Join("..", "..", "evidence", "u80.json")
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
