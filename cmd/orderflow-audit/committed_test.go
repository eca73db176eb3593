package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
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
	got, _, err := renderReport(t.Context(), committedEvidence, checks.Options{})
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
	for _, want := range []string{"/evidence/u80.json", "/evidence/u80/", "/evidence/.u80-*/", "/evidence/.u80.lock"} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf(".gitignore lacks %s", want)
		}
	}
	if filepath.Clean(committedEvidence) == filepath.Join("..", "..", "evidence", "u80.json") {
		t.Errorf("the committed example is the default output of run")
	}
}

// TestCommittedWitnessesRead: the committed example's witnesses are on
// disk as the evidence lists them (sha256 and size), its binlog files read
// (our reader; mariadb-binlog too where installed) and its broker data
// directory serves every topic of the run.
func TestCommittedWitnessesRead(t *testing.T) {
	ev, _, err := evidence.ReadFile(committedEvidence)
	if err != nil {
		t.Fatal(err)
	}
	w := ev.Witness
	if w == nil || w.Database == nil || w.Broker == nil || len(w.Missing) != 0 {
		t.Fatalf("the committed example's witness = %+v; want both (scripts/regen-evidence.sh)", w)
	}
	dir := filepath.Dir(committedEvidence)
	for _, f := range append(append([]evidence.WitnessFile{}, w.Database.Files...), w.Broker.Files...) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		sum := sha256.Sum256(b)
		if err != nil || int64(len(b)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("%s: %d bytes, sha256 %x (%v); listed %d, %s", f.Path, len(b), sum, err, f.Size, f.SHA256)
		}
	}
	paths, err := binlog.Files(filepath.Join(runner.LogDir(committedEvidence), "witness", "db"))
	if err != nil {
		t.Fatal(err)
	}
	if h, err := binlog.ReadAll(paths); err != nil || len(h.Transactions) == 0 {
		t.Errorf("binlog.ReadAll: %d transactions, %v", len(h.Transactions), err)
	}
	if mb, err := exec.LookPath("mariadb-binlog"); err == nil {
		if out, err := exec.Command(mb, append([]string{"--no-defaults"}, paths...)...).CombinedOutput(); err != nil {
			t.Errorf("mariadb-binlog: %v\n%s", err, out[max(0, len(out)-2000):])
		}
	}
	log, err := broker.ReadDataDir(t.Context(), filepath.Join(runner.LogDir(committedEvidence), "witness", "kafka"), broker.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range ev.Scenarios {
		for _, topic := range sc.Topics {
			if p, ok := log.Partition(topic, 0); !ok || p.End == 0 {
				t.Errorf("%s: not served from the committed broker data (%+v)", topic, p)
			}
		}
	}
}
