package spec

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestScenariosWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All() {
		if seen[s.ID] {
			t.Errorf("scenario %s declared twice", s.ID)
		}
		seen[s.ID] = true
		if !slices.Contains(Suites, s.Suite) {
			t.Errorf("%s: unknown suite %q", s.ID, s.Suite)
		}
		if !slices.Contains([]string{BoundaryNone, BoundaryCommit, BoundarySend, BoundaryAck}, s.Boundary) {
			t.Errorf("%s: unknown boundary %q", s.ID, s.Boundary)
		}
		if s.Description == "" || len(s.Metrics) == 0 {
			t.Errorf("%s: needs a description and metrics", s.ID)
		}
		names := map[string]bool{}
		for _, m := range s.Metrics {
			if m.Name == "" || strings.ContainsAny(m.Name, " =") || names[m.Name] {
				t.Errorf("%s: bad or repeated metric name %q", s.ID, m.Name)
			}
			names[m.Name] = true
			if m.Means == "" || strings.Contains(m.Means, "|") {
				t.Errorf("%s: metric %s needs a meaning (Means) without a |", s.ID, m.Name)
			}
			// The README's example line needs a value for each metric of
			// the default selection: the accepted one, or an example.
			if m.Accept != "" && m.Example != "" || m.Accept == "" && m.Example == "" && !s.OptIn {
				t.Errorf("%s: metric %s needs either Accept or Example (Accept %q, Example %q)", s.ID, m.Name, m.Accept, m.Example)
			}
		}
		if strings.Contains(s.Description+s.Details+s.Also, "|") {
			t.Errorf("%s: a | in the description, details or also would break docs/scenarios.md's table", s.ID)
		}
		for _, f := range s.Faults {
			if _, ok := LookupFault(f); !ok {
				t.Errorf("%s: fault %s by %s is not in the fault table", s.ID, f.Point, f.Injection)
			}
		}
		if (s.Boundary == BoundaryNone) != (len(s.Faults) == 0) && s.Suite != SuiteEXT && s.Suite != SuiteSweep {
			t.Errorf("%s: a boundary scenario injects a fault and only it (boundary %s, %d faults)", s.ID, s.Boundary, len(s.Faults))
		}
		if s.Design != nil && (s.Suite != SuiteU80 || s.Boundary == BoundaryNone) {
			t.Errorf("%s: only a U80 boundary scenario stands for a row of the boundary table", s.ID)
		}
	}
}

// TestReferenceOrder: the reference scenarios run in the order docs/design.md
// lists their lines, suite by suite.
func TestReferenceOrder(t *testing.T) {
	var got []string
	for _, id := range IDs() {
		if slices.Contains(referenceOrder, id) {
			got = append(got, id)
		}
	}
	if !slices.Equal(got, referenceOrder) {
		t.Fatalf("run order %v; want %v", got, referenceOrder)
	}
	for _, id := range referenceOrder {
		if _, ok := Lookup(id); !ok {
			t.Errorf("reference scenario %s is not declared", id)
		}
	}
}

func TestBoundaryTableCoversEachBoundaryOnce(t *testing.T) {
	var got []string
	for _, s := range Boundaries() {
		got = append(got, s.Boundary)
	}
	if want := []string{BoundaryCommit, BoundarySend, BoundaryAck}; !slices.Equal(got, want) {
		t.Fatalf("boundary table rows %v; want %v", got, want)
	}
}

func TestSelect(t *testing.T) {
	got, err := Select([]string{"offsetReplay", "placement"})
	if err != nil || len(got) != 2 || got[0].ID != "placement" || got[1].ID != "offsetReplay" {
		t.Fatalf("Select = %v, %v; want placement, offsetReplay in run order", got, err)
	}
	if _, err := Select([]string{"normalChain", "nope"}); err == nil || !strings.Contains(err.Error(), "nope") ||
		!strings.Contains(err.Error(), "offsetReplay") {
		t.Fatalf("Select(nope) = %v; want an error naming nope and the valid ids", err)
	}
}

func TestFaultTable(t *testing.T) {
	seen := map[FaultRef]bool{}
	for _, f := range Faults {
		if seen[f.FaultRef] {
			t.Errorf("fault %s by %s listed twice", f.Point, f.Injection)
		}
		seen[f.FaultRef] = true
		if f.Actor == "" || f.How == "" || f.CannotInfer == "" || f.Simulates == "" {
			t.Errorf("fault %s by %s: actor, simulates, how and cannot-infer are required", f.Point, f.Injection)
		}
		if f.NeedsPlant != "" {
			if _, ok := LookupPlant(f.NeedsPlant); !ok || f.Unreachable == "" {
				t.Errorf("fault %s needs an unknown plant %q or lacks its unreachable text", f.Point, f.NeedsPlant)
			}
		}
		if f.Simulated != "" && (f.Injection != InjectHook || !Killable(f.Point)) {
			t.Errorf("fault %s by %s: Simulated is for an in-process stand-in of a killable point", f.Point, f.Injection)
		}
	}
}

func TestPlantsExposedByDeclaredScenarios(t *testing.T) {
	for _, p := range Plants {
		if p.Description == "" || len(p.Exposures) == 0 {
			t.Errorf("plant %s: needs a description and an exposing scenario", p.Bug)
		}
		for _, x := range p.Exposures {
			if _, ok := Lookup(x.Scenario); !ok || len(x.Rules) == 0 {
				t.Errorf("plant %s: exposure %+v names an unknown scenario or no rule", p.Bug, x)
			}
		}
		if got, err := ParsePlant(p.Bug); err != nil || got != p.Bug {
			t.Errorf("ParsePlant(%q) = %q, %v", p.Bug, got, err)
		}
	}
	if _, err := ParsePlant("typo"); err == nil || !strings.Contains(err.Error(), "mark-without-token") {
		t.Errorf("ParsePlant(typo) = %v; want an error listing the valid bugs", err)
	}
}

// TestRequiredFaults: a run must show every declared fault but a nemesis's
// and one only a planted bug opens.
func TestRequiredFaults(t *testing.T) {
	for _, c := range []struct {
		id   string
		want []Point
	}{
		{"effectDbError", []Point{EffectCommitKilled, EffectInsertError}},
		{"relayKill9", []Point{AfterPublishBeforeMark}},
		{"orderCrashWindow", nil},
		{"chaos", nil},
		{"normalChain", nil},
	} {
		s, ok := Lookup(c.id)
		if !ok {
			t.Fatalf("no scenario %s", c.id)
		}
		if got := s.RequiredFaults(); !slices.Equal(got, c.want) {
			t.Errorf("%s.RequiredFaults() = %v; want %v", c.id, got, c.want)
		}
	}
}

// TestEveryTopicInTable: every package-level []Scenario slice of a topic
// file is named in table, so that no declared scenario is left out of
// All (and then out of the runner's and the verifier's completeness
// tests too).
func TestEveryTopicInTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	var topics, inTable []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != gotoken.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if id.Name == "table" && i < len(vs.Values) {
						ast.Inspect(vs.Values[i], func(n ast.Node) bool {
							if x, ok := n.(*ast.Ident); ok {
								inTable = append(inTable, x.Name)
							}
							return true
						})
					}
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.CompositeLit); ok {
							if at, ok := lit.Type.(*ast.ArrayType); ok {
								if el, ok := at.Elt.(*ast.Ident); ok && el.Name == "Scenario" {
									topics = append(topics, id.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	if len(topics) == 0 {
		t.Fatal("found no topic slice: the test no longer reads the topic files")
	}
	for _, topic := range topics {
		if !slices.Contains(inTable, topic) {
			t.Errorf("%s declares scenarios but is not in table (spec/spec.go)", topic)
		}
	}
}
