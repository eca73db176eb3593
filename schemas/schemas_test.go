package schemas_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/schemas"
)

func TestEventSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		ok   bool
	}{
		{"claim", `{"seq":1,"time":"2026-11-30T10:00:00Z","run_id":"r1","scenario":"normalChain","actor":"relay-a","kind":"claim","event_id":"e-1","order_id":1,"claim_version":1,"claim_id":"c1","lease_until":"2026-11-30T10:00:30Z","state_before":"PENDING"}`, true},
		{"claim missing token", `{"seq":1,"time":"2026-11-30T10:00:00Z","run_id":"r1","scenario":"normalChain","actor":"relay-a","kind":"claim","event_id":"e-1","order_id":1}`, false},
		{"unknown field", `{"seq":1,"time":"2026-11-30T10:00:00Z","run_id":"r1","scenario":"s","actor":"a","kind":"fault","point":"p","detail":"d","extra":1}`, false},
		{"unknown kind", `{"seq":1,"time":"2026-11-30T10:00:00Z","run_id":"r1","scenario":"s","actor":"a","kind":"teleport"}`, false},
		{"publish ok", `{"seq":2,"time":"2026-11-30T10:00:00Z","run_id":"r1","scenario":"s","actor":"relay-a","kind":"publish","event_id":"e-1","claim_version":1,"claim_id":"c1","topic":"t","partition":0,"offset":0}`, true},
		{"publish neither", `{"seq":2,"time":"2026-11-30T10:00:00Z","run_id":"r1","scenario":"s","actor":"relay-a","kind":"publish","event_id":"e-1","claim_version":1,"claim_id":"c1","topic":"t"}`, false},
		{"seq zero", `{"seq":0,"time":"2026-11-30T10:00:00Z","run_id":"r1","scenario":"s","actor":"a","kind":"fault","point":"p","detail":"d"}`, false},
		{"bad time", `{"seq":1,"time":"yesterday","run_id":"r1","scenario":"s","actor":"a","kind":"fault","point":"p","detail":"d"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := schemas.ValidateEventJSON([]byte(tc.line))
			if (err == nil) != tc.ok {
				t.Fatalf("ValidateEventJSON = %v; want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestEveryProblemReported(t *testing.T) {
	err := schemas.ValidateEventJSON([]byte(`{"seq":-1,"time":"x","run_id":"","scenario":"s","actor":"a","kind":"fault"}`))
	var se *schemas.Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v; want *schemas.Error", err)
	}
	locs := map[string]bool{}
	for _, p := range se.Problems {
		locs[p.Location] = true
	}
	for _, want := range []string{"/seq", "/time", "/run_id"} {
		if !locs[want] {
			t.Errorf("no problem at %s in %v", want, se.Problems)
		}
	}
}

func TestNotJSON(t *testing.T) {
	err := schemas.ValidateEvidenceJSON([]byte(`{"a":`))
	if err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("err = %v", err)
	}
}

// TestNotPatternExplained: a path the schema refuses is reported with its
// value, the pattern it must not match and which rule it breaks, at its
// location; not as "not failed".
func TestNotPatternExplained(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "checks", "testdata", "u80", "u80.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	logs := doc["scenarios"].([]any)[0].(map[string]any)["logs"].([]any)
	logs[0].(map[string]any)["path"] = "u80/../../etc/passwd"
	logs[1].(map[string]any)["path"] = "/etc/shadow"
	bad, _ := json.Marshal(doc)
	err = schemas.ValidateEvidenceJSON(bad)
	var se *schemas.Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v; want *schemas.Error", err)
	}
	want := map[string][]string{
		"/scenarios/0/logs/0/path": {`"u80/../../etc/passwd" is refused: it has a ".." component`, `the pattern ^/|(^|/)\.\.(/|$)|\\`},
		"/scenarios/0/logs/1/path": {`"/etc/shadow" is refused: it is absolute`},
	}
	for _, p := range se.Problems {
		if strings.Contains(p.Message, "not failed") {
			t.Errorf("%s: %s", p.Location, p.Message)
		}
		for _, w := range want[p.Location] {
			if !strings.Contains(p.Message, w) {
				t.Errorf("%s: %q lacks %q", p.Location, p.Message, w)
			}
		}
		delete(want, p.Location)
	}
	if len(want) > 0 {
		t.Errorf("no problem at %v in %v", want, se.Problems)
	}
}
