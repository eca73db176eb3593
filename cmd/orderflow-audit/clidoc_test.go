package main

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated parts of docs/cli.md")

// TestCLIDoc holds docs/cli.md's generated parts (each command's synopsis,
// summary, flags and example) to what the commands' -h prints, and
// requires a section for every command.
func TestCLIDoc(t *testing.T) {
	const path = "../../docs/cli.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, missing, err := rewriteCLIDoc(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("docs/cli.md has no section (<!-- cli:begin NAME -->) for %v", missing)
	}
	if got == string(raw) {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/cli.md is out of date with the commands' flags: go test ./cmd/orderflow-audit -run TestCLIDoc -update")
}
