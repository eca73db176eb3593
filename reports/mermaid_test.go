package reports

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// TestMermaidParses runs Mermaid's own parser (through Node) over every
// diagram of the golden renders and over a diagram of hostile text. It
// needs node and a node_modules directory with mermaid and jsdom, named by
// OFA_MERMAID_NODE_MODULES (for example after `npm install mermaid jsdom`
// in a scratch directory); without them it is skipped.
func TestMermaidParses(t *testing.T) {
	mods := os.Getenv("OFA_MERMAID_NODE_MODULES")
	node, err := exec.LookPath("node")
	if mods == "" || err != nil {
		t.Skip("set OFA_MERMAID_NODE_MODULES to a node_modules with mermaid and jsdom (and have node) to run Mermaid's parser")
	}
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	hostile := []string{"a; b", "#x #59;", "%% comment", "<script>alert(1)</script>", `"quoted"`, "line\nbreak",
		"end", "a-->>b", "x:y:z", "rect rgb(0,0,0)", "Note over a1: hi", "{}[]()"}
	var evs []logEvent
	for i, h := range hostile {
		evs = append(evs,
			logEvent{Event: evidence.Event{Seq: int64(2*i + 1), Time: t0, Actor: "relay-A", Kind: evidence.KindPublish, EventID: h,
				ClaimVersion: evidence.Ptr(int64(1)), ClaimID: h, Topic: "t", Err: h}},
			logEvent{Event: evidence.Event{Seq: int64(2*i + 2), Time: t0, Actor: "scenario", Kind: evidence.KindFault, Point: h, Detail: h}})
	}
	lines := diagram(evs).lines
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "hostile.md")}
	if err := os.WriteFile(files[0], []byte("```mermaid\n"+strings.Join(lines, "\n")+"\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range goldenCases {
		files = append(files, filepath.Join("testdata", tc.name+".golden"))
	}
	script, err := filepath.Abs("testdata/mermaid/check.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// Node resolves imports from the script's directory upwards, so run a
	// copy of it next to the modules.
	run := filepath.Join(filepath.Dir(mods), "ofa-check.mjs")
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run, src, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(run)
	out, err := exec.CommandContext(t.Context(), node, append([]string{run}, files...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), " bad 0") {
		t.Fatalf("mermaid parse: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
