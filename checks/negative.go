package checks

import (
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// negativeControl checks a planted run once every scenario was checked: a
// bug planted into the system under test must have been caught by one of
// its rules. Without this, clean evidence relabelled as a planted run
// would verify as a plain PASS.
func (c *checker) negativeControl() {
	planted := c.ev.Run.Planted
	if sel := c.selected; sel != nil && sel.Plant != planted {
		c.mismatch("", "planted-mismatch", "run.planted", planted, sel.Plant,
			"run.planted says %q but run.selection plants %q: the run's label as a negative control was edited", planted, sel.Plant)
	}
	if planted == "" {
		return
	}
	nc, ok := spec.LookupPlant(planted)
	if !ok {
		c.fail("", "planted-unknown", "run.planted names bug %q, which the verifier's table of negative controls "+
			"(docs/negative-controls.md) does not know: what should have caught it cannot be checked", planted)
		return
	}
	if slices.ContainsFunc(c.v.Reasons, func(r Reason) bool { return slices.Contains(nc.Rules(), r.Rule) }) {
		return
	}
	var ran []string
	for _, sc := range c.ev.Scenarios {
		if sc.Status != evidence.StatusNotRun && slices.Contains(nc.Scenarios(), sc.ID) && !slices.Contains(ran, sc.ID) {
			ran = append(ran, sc.ID)
		}
	}
	if len(ran) > 0 {
		c.fail("", "negative-control-not-tripped", "bug %s was planted and %s ran, which exposes it, but none of %s caught it: "+
			"a negative control that does not trip proves nothing (the bug was not really planted, or the evidence is not that run's)",
			planted, strings.Join(ran, ", "), strings.Join(nc.Rules(), ", "))
		return
	}
	c.inconclusive("", "negative-control-not-run", "bug %s was planted, but no scenario that exposes it (%s) ran: "+
		"whether %s would catch it cannot be concluded from this run", planted, strings.Join(nc.Scenarios(), ", "), strings.Join(nc.Rules(), ", "))
}
