package model

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/model/modeltest"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// TestRuleTable: every rule once, with a stable kebab-case id, a layer
// and a one-line description.
func TestRuleTable(t *testing.T) {
	seen := map[Rule]bool{}
	for _, r := range Rules {
		if seen[r.Rule] {
			t.Errorf("rule %s is listed twice", r.Rule)
		}
		seen[r.Rule] = true
		if !kebab.MatchString(string(r.Rule)) {
			t.Errorf("rule id %q is not kebab-case", r.Rule)
		}
		if !slices.Contains(spec.Layers, r.Layer) {
			t.Errorf("rule %s: layer %q is not one of %v", r.Rule, r.Layer, spec.Layers)
		}
		if r.Description == "" || strings.Contains(r.Description, "\n") {
			t.Errorf("rule %s: the description must be one line, got %q", r.Rule, r.Description)
		}
		if LayerOf(r.Rule) != r.Layer {
			t.Errorf("LayerOf(%s) = %q; want %q", r.Rule, LayerOf(r.Rule), r.Layer)
		}
	}
	if LayerOf("no-such-rule") != "" {
		t.Errorf("LayerOf of an unknown rule = %q; want \"\"", LayerOf("no-such-rule"))
	}
}

// TestRulesDeclared reads the package's source: every Rule constant is in
// Rules, and every violation is reported with a Rule constant (not a
// string that would escape the table).
func TestRulesDeclared(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]Rule{} // name -> value
	type call struct {
		pos token.Position
		arg ast.Expr
	}
	var calls []call
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.ValueSpec:
				if id, ok := x.Type.(*ast.Ident); ok && id.Name == "Rule" {
					for i, n := range x.Names {
						lit, ok := x.Values[i].(*ast.BasicLit)
						if !ok {
							t.Fatalf("%s: rule %s is not a string literal", fset.Position(n.Pos()), n.Name)
						}
						v, _ := strconv.Unquote(lit.Value)
						consts[n.Name] = Rule(v)
					}
				}
			case *ast.CallExpr:
				sel, ok := x.Fun.(*ast.SelectorExpr)
				if !ok {
					break
				}
				switch sel.Sel.Name {
				case "violate":
					calls = append(calls, call{fset.Position(x.Pos()), x.Args[0]})
				case "report":
					calls = append(calls, call{fset.Position(x.Pos()), x.Args[1]})
				}
			}
			return true
		})
	}
	if len(consts) != len(Rules) {
		t.Errorf("%d Rule constants, %d rules in Rules", len(consts), len(Rules))
	}
	for name, v := range consts {
		if LayerOf(v) == "" {
			t.Errorf("constant %s = %q is not in Rules", name, v)
		}
	}
	if len(calls) < len(Rules) {
		t.Errorf("found %d calls of violate and report; want at least one per rule", len(calls))
	}
	used := map[Rule]bool{}
	for _, c := range calls {
		id, ok := c.arg.(*ast.Ident)
		if ok && id.Name == "rule" { // report called by violate
			continue
		}
		if !ok || consts[id.Name] == "" {
			t.Errorf("%s: a violation reported with %T, not a Rule constant", c.pos, c.arg)
			continue
		}
		used[consts[id.Name]] = true
	}
	for _, r := range Rules {
		if !used[r.Rule] {
			t.Errorf("rule %s is never reported", r.Rule)
		}
	}
}

// historyRule returns the rule a history directory is named after:
// "<rule>" or "<rule>--<variant>"; "" for a legal history ("ok-...").
func historyRule(name string) (Rule, bool) {
	if strings.HasPrefix(name, "ok-") {
		return "", true
	}
	r, _, _ := strings.Cut(name, "--")
	return Rule(r), LayerOf(Rule(r)) != ""
}

// TestEveryRuleHasHistory: each rule has testdata/histories/<rule>/, and
// each history directory names the one rule its history breaks (or is a
// legal history, ok-<name>, that breaks none).
func TestEveryRuleHasHistory(t *testing.T) {
	have := map[Rule]bool{}
	for _, dir := range modeltest.Histories(t, histories) {
		h := modeltest.Load(t, dir)
		rule, ok := historyRule(h.Name)
		if !ok {
			t.Errorf("history %s names no rule: call it <rule>, <rule>--<variant> or ok-<name>", h.Name)
			continue
		}
		for _, w := range h.Want {
			if Rule(w) != rule {
				t.Errorf("history %s breaks %s: a history breaks exactly the rule it is named after", h.Name, w)
			}
		}
		switch {
		case rule != "" && len(h.Want) == 0:
			t.Errorf("history %s breaks no rule; want %s", h.Name, rule)
		case h.Name == string(rule):
			have[rule] = true
		}
	}
	for _, r := range Rules {
		if !have[r.Rule] {
			t.Errorf("rule %s has no history %s/%s", r.Rule, histories, r.Rule)
		}
	}
}

// tokenPart lists the histories that break the claim-token part of a rule
// of another layer (RuleFaultMismatch): they need that layer as well.
var tokenPart = map[string]bool{"fault-mismatch--token": true}

// TestLayers replays every history with every combination of layers: it
// reports exactly the rules of want whose layers are on. The state does
// not depend on the layers, so neither do the metrics and tables.
func TestLayers(t *testing.T) {
	for _, dir := range modeltest.Histories(t, histories) {
		h := modeltest.Load(t, dir)
		all := replay(t, h, nil)
		for mask := 1; mask < 1<<len(spec.Layers); mask++ {
			var layers []spec.Layer
			for i, l := range spec.Layers {
				if mask&(1<<i) != 0 {
					layers = append(layers, l)
				}
			}
			var want []string
			for _, w := range h.Want {
				if slices.Contains(layers, LayerOf(Rule(w))) && (!tokenPart[h.Name] || slices.Contains(layers, spec.LayerClaimToken)) {
					want = append(want, w)
				}
			}
			slices.Sort(want)
			m := replay(t, h, layers)
			if got := reported(m); !slices.Equal(got, want) {
				t.Errorf("%s with layers %v: rules = %v; want %v", h.Name, layers, got, want)
			}
			if m.Counts() != all.Counts() || !sameTables(m, all) {
				t.Errorf("%s with layers %v: the state differs from the one with every layer", h.Name, layers)
			}
		}
	}
}

func sameTables(a, b *Model) bool {
	ta, tb := a.Tables(), b.Tables()
	for i := range ta {
		if ta[i].N != tb[i].N {
			return false
		}
		for r := range ta[i].N {
			if !slices.Equal(ta[i].Row(r, nil), tb[i].Row(r, nil)) {
				return false
			}
		}
	}
	return true
}

// TestClaimTokenLayerOff: a relay whose stale mark hit the row breaks a
// claim-token rule; audited with the delivery layer alone (a relay that
// claims no tokens), the same history passes.
func TestClaimTokenLayerOff(t *testing.T) {
	h := modeltest.Load(t, histories+"/stale-token-mark")
	if got := reported(replay(t, h, []spec.Layer{spec.LayerDelivery})); len(got) != 0 {
		t.Errorf("delivery layer alone: rules = %v; want none", got)
	}
	for _, layers := range [][]spec.Layer{{spec.LayerDelivery, spec.LayerClaimToken}, nil, {}} {
		if got := reported(replay(t, h, layers)); !slices.Equal(got, []string{string(RuleStaleTokenMark)}) {
			t.Errorf("layers %v: rules = %v; want [%s]", layers, got, RuleStaleTokenMark)
		}
	}
	if got := reported(replay(t, h, []spec.Layer{"no-such-layer"})); len(got) != 0 {
		t.Errorf("an unknown layer alone: rules = %v; want none (it turns nothing on)", got)
	}
}

// TestEveryKindHandled: Step has a handler for every event kind.
func TestEveryKindHandled(t *testing.T) {
	for _, k := range evidence.Kinds {
		if handlers[k] == nil {
			t.Errorf("no handler for event kind %s", k)
		}
	}
	if len(handlers) != len(evidence.Kinds) {
		t.Errorf("%d handlers for %d event kinds", len(handlers), len(evidence.Kinds))
	}
}
