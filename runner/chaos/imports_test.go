package chaos_test

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestEngineImports keeps the engine apart from what it drives: of this
// module it may import the plan, the fault points' names, the evidence,
// the spec and the infrastructure, never the runner, the reference actors
// or the verifier (the black-box audit drives processes the tool did not
// write through the same engine). Of other modules, the MariaDB driver
// (conn-kill) and the proxy (toxiproxy, its toxics package, where the
// commit-lost toxic registers, and its logger).
func TestEngineImports(t *testing.T) {
	const mod = "github.com/orderflow-audit/orderflow-audit/"
	allowed := []string{mod + "evidence", mod + "spec", mod + "runner/fault", mod + "runner/nemesis", mod + "runner/infra",
		"github.com/go-sql-driver/mysql", "github.com/Shopify/toxiproxy/v2", "github.com/Shopify/toxiproxy/v2/toxics", "github.com/rs/zerolog"}
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
				ok = ok || p == a
			}
			if !ok {
				t.Errorf("%s imports %s: the chaos engine may not depend on what it drives", e.Name(), p)
			}
		}
	}
}
