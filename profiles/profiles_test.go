package profiles_test

import (
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/profiles"
)

// TestReferenceParses: the embedded reference profile is a valid profile
// (a change to it that breaks the schema fails here, not in verify).
func TestReferenceParses(t *testing.T) {
	p, err := profile.Parse("reference.yaml", profiles.Reference())
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "reference" || len(profiles.ReferenceSHA256()) != 64 {
		t.Errorf("name %q, sha256 %q", p.Name, profiles.ReferenceSHA256())
	}
}
