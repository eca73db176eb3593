package checks

import (
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Which scenarios a run selected, read from run.selection (written by the
// runner from its options), so that a scenario deleted from the evidence,
// or one added to it, cannot go unnoticed. run.args are for display and
// replay only: nothing is parsed back from them, so a new flag of `run`
// needs no change here.

// selection compares the scenarios of the evidence with those run.selection
// selected, and says which boundaries this run leaves unproven.
func (c *checker) selection() {
	ev := c.ev
	present := map[string]bool{}
	for _, sc := range ev.Scenarios {
		present[sc.ID] = true
	}
	sel := ev.Run.Selection
	c.selected = sel
	var ids []string
	if sel != nil {
		ids = sel.Scenarios
	}
	// selected == nil: unknown (no run.selection).
	var selected map[string]bool
	switch {
	case sel == nil:
		c.inconclusive("", "selection-missing", "the evidence does not record which scenarios the run selected (no run.selection: "+
			"written by a version before it was recorded, or removed), so a scenario missing from the evidence cannot be detected")
	case len(ids) == 0:
		selected = map[string]bool{}
		for _, id := range modeIDs(nil, sel.ConsumerMode) {
			selected[id] = true
			if !present[id] {
				c.fail(id, "scenario-missing", "run.selection selects every scenario (the default run), but the evidence has no scenario %s: "+
					"it was deleted, or the run was not the default run its selection says", id)
			}
		}
		for _, sc := range ev.Scenarios {
			// A scenario the verifier does not know may belong to the
			// default run of another version of the tool; scenario-unknown
			// already makes it inconclusive.
			if _, known := spec.Lookup(sc.ID); known {
				continue
			}
			selected[sc.ID] = true
		}
	default:
		selected = map[string]bool{}
		for _, id := range modeIDs(ids, sel.ConsumerMode) {
			selected[id] = true
			if !present[id] {
				c.fail(id, "scenario-missing", "run.selection selects scenario %s (--scenarios %s%s), but the evidence has no scenario %s",
					id, strings.Join(ids, ","), modeFlag(sel.ConsumerMode), id)
			}
		}
	}
	if selected != nil {
		for _, sc := range ev.Scenarios {
			if !selected[sc.ID] {
				c.fail(sc.ID, "scenario-not-selected", "the evidence has scenario %s, which run.selection does not select (--scenarios %s%s)",
					sc.ID, strings.Join(ids, ","), modeFlag(sel.ConsumerMode))
			}
		}
	}
	for _, b := range evidence.ComputeBoundaries(ev.Scenarios) {
		if b.Status != evidence.StatusNotRun {
			continue
		}
		if selected != nil && !selected[b.Scenario] {
			c.inconclusive(b.Scenario, "boundary-not-run", "the %s boundary is unproven in this run: its scenario %s was not selected "+
				"(run.selection); nothing about that boundary can be concluded from this evidence", b.Boundary, b.Scenario)
			continue
		}
		c.inconclusive(b.Scenario, "boundary-not-run", "the %s boundary is unproven: its scenario %s did not run", b.Boundary, b.Scenario)
	}
}

// modeIDs are the scenario ids a selection of ids (the default one when
// empty) selects in the consumer mode of run.selection (batch variants,
// spec.BatchID); ids the spec does not know are selected as they are.
func modeIDs(ids []string, mode string) []string {
	if spec.CheckConsumerMode(mode) != nil {
		mode = "" // the schema refuses another value; the scenarios then show what ran
	}
	var known, unknown []string
	for _, id := range ids {
		if _, ok := spec.Lookup(id); ok {
			known = append(known, id)
		} else {
			unknown = append(unknown, id)
		}
	}
	if len(ids) > 0 && len(known) == 0 {
		return unknown
	}
	out, err := spec.ModeIDs(known, mode)
	if err != nil {
		return ids
	}
	return append(out, unknown...)
}

// modeFlag is the --consumer-mode of a selection, for messages.
func modeFlag(mode string) string {
	if mode == "" {
		return ""
	}
	return " --consumer-mode " + mode
}
