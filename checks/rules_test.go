package checks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/invariants"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// ruleUses returns every rule the checker's source (non-test files of
// this package and of ruleDirs) names where a Reason gets its rule: the
// rule argument of fail, inconclusive and mismatch (and the first of the
// witness step's failWitness and reason), the Rule field of a Reason (or
// finding.Reason) literal, and a variable named rule. A string literal is
// returned as it is, a Rule constant by its value; other expressions (a
// rule passed on) are skipped.
func ruleUses(t *testing.T) map[string][]string {
	t.Helper()
	consts := map[string]string{}
	for _, r := range Rules {
		consts[constName(r.Rule)] = string(r.Rule)
	}
	files := ruleFiles(t, "*.go")
	uses := map[string][]string{} // rule -> positions
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "rules.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var exprs []ast.Expr
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && len(x.Args) > 1 &&
					slices.Contains([]string{"fail", "inconclusive", "mismatch"}, sel.Sel.Name) {
					exprs = append(exprs, x.Args[1])
				}
				// The witness step's helpers take the rule first.
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && len(x.Args) > 0 &&
					slices.Contains([]string{"failWitness", "reason"}, sel.Sel.Name) {
					exprs = append(exprs, x.Args[0])
				}
			case *ast.CompositeLit:
				if isReasonType(x.Type) {
					for _, el := range x.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok && kv.Key.(*ast.Ident).Name == "Rule" {
							exprs = append(exprs, kv.Value)
						}
					}
				}
			case *ast.AssignStmt:
				for i, l := range x.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name == "rule" && i < len(x.Rhs) {
						exprs = append(exprs, x.Rhs[i])
					}
				}
			}
			return true
		})
		for _, e := range exprs {
			pos := fset.Position(e.Pos()).String()
			switch x := e.(type) {
			case *ast.BasicLit:
				s, _ := strconv.Unquote(x.Value)
				uses[s] = append(uses[s], pos)
			case *ast.Ident:
				if v, ok := consts[x.Name]; ok {
					uses[v] = append(uses[v], pos)
				}
			}
		}
	}
	return uses
}

// ruleDirs are the sub-packages that report rules of the checker (their
// findings are the checker's: checks.Rules lists them).
var ruleDirs = []string{"crosscheck"}

// ruleFiles returns the files matching pattern in this package's
// directory and in ruleDirs.
func ruleFiles(t *testing.T, pattern string) []string {
	t.Helper()
	var out []string
	for _, dir := range append([]string{"."}, ruleDirs...) {
		files, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, files...)
	}
	return out
}

// isReasonType tells whether a composite literal's type is Reason or
// finding.Reason.
func isReasonType(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "Reason"
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "finding" && x.Sel.Name == "Reason"
	}
	return false
}

// constName is the name of a rule's constant: RuleLogMissing for
// log-missing (with the initialisms SQL, ID and SUT).
func constName(r Rule) string {
	var b strings.Builder
	b.WriteString("Rule")
	for _, w := range strings.Split(string(r), "-") {
		switch w {
		case "sql", "id", "sut":
			b.WriteString(strings.ToUpper(w))
		default:
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// TestCheckerRuleTable: every rule the checker reports is in Rules, once,
// with a one-line description, and every rule of Rules is reported
// somewhere; none is also a rule of the model or an invariant id.
func TestCheckerRuleTable(t *testing.T) {
	kebab := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	invs, err := invariants.All()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[Rule]bool{}
	for _, r := range Rules {
		if seen[r.Rule] {
			t.Errorf("rule %s is listed twice", r.Rule)
		}
		seen[r.Rule] = true
		if !kebab.MatchString(string(r.Rule)) || r.Description == "" || strings.Contains(r.Description, "\n") {
			t.Errorf("rule %q: want a kebab-case id and a one-line description, got %q", r.Rule, r.Description)
		}
		if model.LayerOf(model.Rule(r.Rule)) != "" || slices.ContainsFunc(invs, func(i invariants.Invariant) bool { return i.ID == string(r.Rule) }) {
			t.Errorf("rule %s is also a rule of the model or an invariant", r.Rule)
		}
	}
	uses := ruleUses(t)
	for rule, at := range uses {
		if !seen[Rule(rule)] {
			t.Errorf("%s: rule %q is not in Rules (checks/rules.go)", at[0], rule)
		}
	}
	for _, r := range Rules {
		if len(uses[string(r.Rule)]) == 0 {
			t.Errorf("rule %s of Rules is never reported", r.Rule)
		}
	}
}

// TestCheckerRulesTested: every rule of the checker is named, as a quoted
// string, by a test of this package or of ruleDirs, or a golden file under
// testdata, so that some test provokes it.
func TestCheckerRulesTested(t *testing.T) {
	var corpus strings.Builder
	for _, name := range ruleFiles(t, "*_test.go") {
		if name == "rules_test.go" { // this file names the rules only through Rules
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		corpus.Write(b)
	}
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".golden") {
			b, err := os.ReadFile(path)
			corpus.Write(b)
			return err
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Rules {
		if !strings.Contains(corpus.String(), strconv.Quote(string(r.Rule))) {
			t.Errorf("no test of checks names rule %s: add one that provokes it", r.Rule)
		}
	}
}

// TestPlantRulesKnown: the rules that must catch a planted bug
// (spec.Plants) are rules the verifier has.
func TestPlantRulesKnown(t *testing.T) {
	invs, err := invariants.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range spec.Plants {
		for _, r := range p.Rules() {
			known := model.LayerOf(model.Rule(r)) != "" || slices.ContainsFunc(Rules, func(i RuleInfo) bool { return string(i.Rule) == r }) ||
				slices.ContainsFunc(invs, func(i invariants.Invariant) bool { return i.ID == r })
			if !known {
				t.Errorf("plant %s: rule %s is not a rule of the verifier", p.Bug, r)
			}
		}
	}
}
