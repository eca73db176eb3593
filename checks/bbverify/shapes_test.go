package bbverify_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/bbverify"
	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
)

// expectation is a history's expect.json: the verdict and the rules that
// are neither PASS nor N/A, as scripts/bbshapes/cases.go states them from
// what the history does (not from what the verifier said).
type expectation struct {
	History string            `json:"history"`
	What    string            `json:"what"`
	Status  string            `json:"status"`
	Rules   map[string]string `json:"rules"`
}

// TestShapes verifies the bundles scripts/bbshapes made from real
// servers: pipelines of four shapes other than ours (a cursor relay, a
// completed-at relay, a delete relay, a Debezium-convention table),
// built outside the project, each bundle verified from its profile alone.
// Each must get the verdict its history states, with exactly the rules
// stated not passing.
func TestShapes(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "shapes", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no bundles under testdata/shapes (%v): run go run ./scripts/bbshapes", err)
	}
	broken := map[string]bool{}
	shapes := map[string]map[string]bool{}
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, "expect.json"))
		if err != nil {
			t.Fatal(err)
		}
		var want expectation
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		shape, _, _ := strings.Cut(filepath.Base(dir), "-")
		if shapes[shape] == nil {
			shapes[shape] = map[string]bool{}
		}
		shapes[shape][want.Status] = true
		for id, st := range want.Rules {
			if st == string(blackbox.Fail) || st == string(blackbox.Inconclusive) {
				broken[id] = true
			}
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			v, err := bbverify.Verify(t.Context(), filepath.Join(dir, "audit.json"), bbverify.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if v.Layer == nil {
				t.Fatalf("rules not run: %s", v.NotRun)
			}
			got := v.Unpassed()
			if want.Rules == nil {
				want.Rules = map[string]string{}
			}
			if string(v.Status) != want.Status || !maps.Equal(got, want.Rules) {
				t.Errorf("%s (%s): verdict %s, rules %v; want %s, %v\nreasons: %+v", want.History, want.What, v.Status, got, want.Status, want.Rules, v.Layer.Reasons)
			}
		})
	}
	for _, s := range []string{"cursor", "completed", "delete", "debezium"} {
		if !shapes[s]["PASS"] || !shapes[s]["FAIL"] {
			t.Errorf("shape %s: a legal (PASS) and a breaking (FAIL) history are both needed; have %v", s, shapes[s])
		}
	}
	var missing []string
	for _, r := range blackbox.Rules {
		if !broken[r.ID] {
			missing = append(missing, r.ID)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("rules no real-server history breaks: %v", missing)
	}
}
