package schemas_test

import (
	"errors"
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
