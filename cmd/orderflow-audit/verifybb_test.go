package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"crypto/sha256"

	"github.com/orderflow-audit/orderflow-audit/checks/bbverify/bbtest"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/profiles"
	"github.com/orderflow-audit/orderflow-audit/reports"
)

// blackBoxBundle wraps a scenario of a committed reference bundle into a
// black-box bundle in a temporary directory (bbtest.Wrap) and returns its
// evidence path.
func blackBoxBundle(t *testing.T, ref, scenario string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "audit.json")
	if _, err := (bbtest.Wrap{Reference: ref, Scenario: scenario, Out: out}).Write(t.Context()); err != nil {
		t.Fatal(err)
	}
	return out
}

func noCrash(t *testing.T, out string) {
	t.Helper()
	for _, bad := range []string{"goroutine ", "panic:", "hunter2"} {
		if strings.Contains(out, bad) {
			t.Errorf("output contains %q:\n%s", bad, out)
		}
	}
}

// TestVerifyBlackBox: verify takes a black-box audit's bundle by its
// kind and exits as for a reference bundle: 0 PASS, 1 FAIL (a planted
// bug in the witnesses; a witness changed after the run, by the rule a
// reference bundle fails by), 2 bad input (a profile in the bundle that is
// not one, --allow-unwitnessed).
func TestVerifyBlackBox(t *testing.T) {
	example := filepath.Join("..", "..", "evidence", "example", "u80.json")
	clean := blackBoxBundle(t, example, "normalChain")
	planted := blackBoxBundle(t, filepath.Join("..", "..", "checks", "testdata", "planted", "no-inbox-dedupe", "u80.json"), "")
	tampered := blackBoxBundle(t, example, "normalChain")
	flipByte(t, filepath.Join(filepath.Dir(tampered), "audit", "witness", "db", "binlog.000001"))
	badProfile := blackBoxBundle(t, example, "normalChain")
	forgeProfile(t, badProfile, "name: x\ndatabase: {dsn: \"u:hunter2@tcp(db:3306)/s\"}\nrun_this: \"rm -rf /\"\n")

	title := "orderflow-audit verify: PASS for the black-box audit of profile reference (sha256 " + profiles.ReferenceSHA256()[:12] + "), run "
	for _, tc := range []struct {
		name             string
		args             []string
		code             int
		stdout, stderr   string
		notStdout, extra string
	}{
		{"pass", []string{"verify", clean}, exitOK, title, "", "", "rules      16 PASS, 1 N/A (answer)"},
		{"planted", []string{"verify", planted}, exitFail, "orderflow-audit verify: FAIL for the black-box audit", "", "", "[effects]"},
		{"tampered witness", []string{"verify", tampered}, exitFail, "[witness-digest] audit/witness/db/binlog.000001", "", "", "rules      not run"},
		{"bad profile", []string{"verify", badProfile}, exitUsage, "", "bad input: the profile in the bundle is not a valid profile", "", "profile.yaml:"},
		{"allow-unwitnessed", []string{"verify", "--allow-unwitnessed", clean}, exitUsage, "", "witnesses alone", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) || !strings.Contains(stdout+stderr, tc.extra) {
				t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			noCrash(t, stdout+stderr)
		})
	}
	t.Run("json", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "verify", "--json", clean)
		var v struct {
			Kind, Status string
			Profile      struct{ Name, SHA256 string }
			Layer        struct{ Rules []struct{ ID, Status string } }
		}
		if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != exitOK || v.Kind != "black-box" || v.Status != "PASS" ||
			v.Profile.SHA256 != profiles.ReferenceSHA256() || len(v.Layer.Rules) < 17 {
			t.Fatalf("exit %d, %+v (%v):\n%s", code, v, err, stdout)
		}
		code, stdout, stderr := runCLI(t, "verify", "--json", badProfile)
		var bad badInputJSON
		if err := json.Unmarshal([]byte(stdout), &bad); err != nil || code != exitUsage || bad.Status != "BAD_INPUT" || len(bad.Problems) == 0 || stderr == "" {
			t.Fatalf("bad profile --json: exit %d, %+v (%v)", code, bad, err)
		}
		noCrash(t, stdout+stderr)
	})
	// The reference bundle the black-box one was wrapped from, with the
	// same byte of its binlog flipped, fails by the same rule.
	t.Run("same failure as a reference bundle", func(t *testing.T) {
		ref := verifyFixture(t, "u80", func(dir string) {
			flipByte(t, filepath.Join(dir, "u80", "witness", "db", "binlog.000001"))
		})
		code, stdout, _ := runCLI(t, "verify", ref)
		if code != exitFail || !strings.Contains(stdout, "[witness-digest] witness u80/witness/db/binlog.000001") {
			t.Fatalf("reference: exit %d:\n%s", code, stdout)
		}
	})
}

// flipByte changes one byte of a file in the middle.
func flipByte(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x20
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// forgeProfile replaces the bundle's profile with text and records its
// digest in the evidence, as one who rewrote both would.
func forgeProfile(t *testing.T, path, text string) {
	t.Helper()
	bb := readBlackBox(t, path)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), filepath.FromSlash(bb.Profile.Path)), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(text))
	bb.Profile.Size, bb.Profile.SHA256 = int64(len(text)), hex.EncodeToString(sum[:])
	if err := evidence.WriteBlackBox(path, bb); err != nil {
		t.Fatal(err)
	}
}

// TestReportBlackBox: report renders a black-box bundle's verdict with
// the profile in the title, a section per rule and the proof boundary;
// -o inside the bundle is refused (exit 2) and writes nothing.
func TestReportBlackBox(t *testing.T) {
	path := blackBoxBundle(t, filepath.Join("..", "..", "checks", "testdata", "planted", "offset-before-effect", "u80.json"), "")
	code, stdout, stderr := runCLI(t, "report", path)
	head := reports.Marker + "\n# FAIL: black-box audit of profile reference (sha256 " + profiles.ReferenceSHA256()[:12] + ")\n"
	if code != exitFail || !strings.HasPrefix(stdout, head) {
		t.Fatalf("exit %d; want 1 and the title\n%.800s\nstderr: %s", code, stdout, stderr)
	}
	for _, want := range []string{"**Why:** 2 rule(s) failed: effects (1), invariants (1)", "### invariants: FAIL", "### effects: FAIL", "### lag: PASS", "## Proof boundary",
		"which process did what", "- **FAIL** gtid "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	inside := filepath.Join(filepath.Dir(path), "audit", "report.md")
	if code, _, stderr := runCLI(t, "report", "-o", inside, path); code != exitUsage || !strings.Contains(stderr, "inside the evidence bundle") {
		t.Errorf("-o inside the bundle: exit %d, %s", code, stderr)
	}
	if _, err := os.Lstat(inside); err == nil {
		t.Error("a report was written inside the bundle")
	}
	out := filepath.Join(t.TempDir(), "bb.md")
	if code, _, stderr := runCLI(t, "report", "-o", out, path); code != exitFail || !strings.Contains(stderr, "report written to") {
		t.Fatalf("-o: exit %d, %s", code, stderr)
	}
	if b, _ := os.ReadFile(out); !strings.HasPrefix(string(b), head) {
		t.Errorf("the written report begins %.200q", b)
	}
}

// TestReportBlackBoxTimeline: the report of a bundle that lost an event
// (a real server's binlog: scripts/bbshapes, cursor-lost-skipped) tells
// the event's story in commit order; a legal bundle's report has none.
func TestReportBlackBoxTimeline(t *testing.T) {
	shapes := filepath.Join("..", "..", "checks", "bbverify", "testdata", "shapes")
	code, stdout, stderr := runCLI(t, "report", filepath.Join(shapes, "cursor-lost-skipped", "audit.json"))
	if code != exitFail {
		t.Fatalf("exit %d; want 1\n%s", code, stderr)
	}
	section := stdout[strings.Index(stdout, "\n## How event ")+1:]
	if i := strings.Index(section, "\n## The bundle"); i < 0 || !strings.HasPrefix(section, "## How event e-1 was lost (`lost-skipped`)") {
		t.Fatalf("no timeline section before the bundle's:\n%.3000s", stdout)
	} else {
		section = section[:i]
	}
	// The steps in commit order: the cursor below the event, a row above
	// it committed, the cursor passing it, the event's commit.
	at := -1
	for _, want := range []string{"below the event's position 1", "above position 1 committed before the cursor passed it",
		"past the event's position 1, where no committed row held it yet", "event e-1's row committed at position 1"} {
		i := strings.Index(section, want)
		if i <= at {
			t.Errorf("the timeline lacks %q after the step before it:\n%s", want, section)
		}
		at = i
	}
	code, stdout, _ = runCLI(t, "report", filepath.Join(shapes, "cursor-legal", "audit.json"))
	if code != exitOK || strings.Contains(stdout, "## How event") {
		t.Errorf("a legal bundle: exit %d, a timeline section: %v", code, strings.Contains(stdout, "## How event"))
	}
}
