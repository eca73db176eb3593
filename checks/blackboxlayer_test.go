package checks

import (
	"bytes"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/profiles"
)

// TestBothLayers: with Options.BlackBox, a reference bundle is verified
// by both layers over the same witnesses. On the committed runs they
// agree (clean: PASS; a delivery plant: both FAIL); a plant beyond the
// witnesses leaves the white-box FAIL standing over a black-box PASS; a
// layer that finds worse than the white-box verifier (here: a profile
// that promises two effects per event) makes the verdict its own with a
// layers-disagree reason; without witnesses the layer does not run.
func TestBothLayers(t *testing.T) {
	strict := bytes.Replace(profiles.Reference(), []byte("per_event: 1"), []byte("per_event: 2"), 1)
	if bytes.Equal(strict, profiles.Reference()) {
		t.Fatal("the reference profile's per_event is not where the test looks for it")
	}
	unwitnessed := func(t *testing.T) string {
		path := copyFixture(t, "u80")
		ev := readEvidence(t, path)
		ev.Witness = &evidence.Witness{Missing: []string{"database: not captured", "broker: not captured"}}
		ev.ProofBoundary = evidence.ComputeProofBoundary(ev)
		writeEvidence(t, path, ev)
		return path
	}
	for _, tc := range []struct {
		name     string
		path     func(t *testing.T) string
		profile  []byte
		allow    bool
		layer    Status
		verdict  Status
		disagree bool
		line     string
	}{
		{"clean", func(t *testing.T) string { return copyFixture(t, "u80") }, nil, false, Pass, Pass, false, "the layers agree"},
		{"delivery plant", func(t *testing.T) string { return copyFixture(t, "planted/offset-before-effect") }, nil, false, Fail, Fail, false, "the layers agree"},
		{"plant beyond the witnesses", func(t *testing.T) string { return copyFixture(t, "planted/mark-without-token") }, nil, false, Pass, Fail, false, "the white-box FAIL stands"},
		{"the layer finds worse", func(t *testing.T) string { return copyFixture(t, "u80") }, strict, false, Fail, Fail, true, "the layers DISAGREE"},
		{"unwitnessed", unwitnessed, nil, true, notRun, Pass, false, "black-box  not run:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Verify(t.Context(), tc.path(t), Options{BlackBox: true, BlackBoxProfile: tc.profile, AllowUnwitnessed: tc.allow})
			if err != nil {
				t.Fatal(err)
			}
			l := v.BlackBox
			if l == nil || l.Status != tc.layer || v.Status != tc.verdict || l.Disagree != tc.disagree || hasRule(v, "layers-disagree") != tc.disagree {
				t.Fatalf("layer %+v, verdict %s, rules %v; want layer %s, verdict %s, disagree %v", l, v.Status, rules(v), tc.layer, tc.verdict, tc.disagree)
			}
			var text strings.Builder
			if err := WriteText(&text, v); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), tc.line) || strings.Count(text.String(), "\nblack-box  ") != 1 {
				t.Errorf("the text has not one black-box line saying %q:\n%s", tc.line, text.String())
			}
			if tc.layer == Pass && len(l.Scenarios) == 0 {
				t.Error("the layer audited no scenario")
			}
		})
	}
	// Without the option, nothing changes: no layer, no line.
	v := verify(t, copyFixture(t, "u80"))
	if v.BlackBox != nil {
		t.Errorf("BlackBox = %+v without Options.BlackBox", v.BlackBox)
	}
}
