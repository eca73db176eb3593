package checks

import (
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// systemUnderTest checks what the evidence says of the system under test
// and returns the layers of rules that apply to it. Evidence without the
// record (written before the seam) is this project's implementation. The
// reference implementation claims every feature, so evidence that names it
// with fewer features or layers was edited to escape rules; another
// implementation gets the layers its features imply, and the scenarios it
// ran must not need a feature it does not claim.
func (c *checker) systemUnderTest() []spec.Layer {
	s := c.ev.Environment.SUT
	if s == nil {
		return spec.Layers
	}
	var fs spec.Features
	for _, f := range s.Features {
		fs = append(fs, spec.Feature(f))
	}
	if s.Name == spec.ReferenceSUT && len(fs.Missing(spec.AllFeatures)) > 0 {
		c.mismatch("", "sut-mismatch", "environment.system_under_test.features", strings.Join(s.Features, ","),
			joinFeatures(spec.AllFeatures), "the reference implementation claims every feature; this evidence says it claims fewer")
		fs = spec.AllFeatures
	}
	want := fs.Layers()
	if !slices.Equal(s.Layers, layerNames(want)) {
		c.mismatch("", "sut-mismatch", "environment.system_under_test.layers", strings.Join(s.Layers, ","),
			strings.Join(layerNames(want), ","), "the layers of rules do not follow from the features the system under test claims")
	}
	for _, sc := range c.ev.Scenarios {
		sp, ok := spec.Lookup(sc.ID)
		if !ok || sc.Status == evidence.StatusNotRun {
			continue
		}
		if missing := fs.Missing(sp.Needs); len(missing) > 0 {
			c.fail(sc.ID, "sut-mismatch", "scenario %s ran (%s), but it needs %s, which the system under test (%s) does not claim",
				sc.ID, sc.Status, joinFeatures(missing), s.Name)
		}
	}
	return want
}

func joinFeatures(fs []spec.Feature) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = string(f)
	}
	return strings.Join(parts, ",")
}

func layerNames(ls []spec.Layer) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return out
}
