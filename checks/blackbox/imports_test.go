package blackbox_test

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestWitnessOnlyImports keeps the layer witness-only: besides the
// standard library it may import evidence/..., schemas and the witness
// readers, never the runner or the reference pipeline (whose facts would
// then leak into a verdict that claims to rest on witnesses alone).
func TestWitnessOnlyImports(t *testing.T) {
	const mod = "github.com/orderflow-audit/orderflow-audit/"
	allowed := []string{mod + "evidence", mod + "schemas", mod + "witness/binlog", mod + "witness/broker"}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !strings.Contains(p, ".") {
				continue // the standard library
			}
			ok := false
			for _, a := range allowed {
				ok = ok || p == a || strings.HasPrefix(p, a+"/")
			}
			if !ok {
				t.Errorf("%s imports %s: the black-box layer reads witnesses only", e.Name(), p)
			}
		}
	}
}
