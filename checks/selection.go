package checks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Which scenarios a run selected, read back from run.args (the arguments
// of `orderflow-audit run`, recorded by the runner), so that a scenario
// deleted from the evidence cannot go unnoticed.

// runFlags are the flags of `orderflow-audit run`: true for those that
// take a value, false for booleans. run.args is parsed the way the flag
// package parsed it: "-name" and "--name", "name=value" or the value as
// the next argument (booleans only with "="); the last of a repeated flag
// wins.
var runFlags = map[string]bool{
	"scenarios": true, "seed": true, "timeout": true, "kafka-brokers": true, "mysql-dsn": true,
	"out": true, "plant": true, "db": true, "kafka": true,
	"keep": false, "json": false,
	// The chaos scenario's flags (they configure it, not the selection).
	"duration": true, "orders": true, "relays": true, "consumers": true, "faults": true, "only-faults": true,
}

// runArgs is what the verifier reads from run.args.
type runArgs struct {
	// scenarios are the ids --scenarios selected, in the order given and
	// without repeats; nil when the flag is absent or empty: the default
	// run, every scenario.
	scenarios []string
	plant     string
}

// parseRunArgs reads run.args. An error means that the arguments are not
// those of a run this verifier knows (another flag, a positional
// argument, a malformed flag): what they selected is then unknown.
func parseRunArgs(args []string) (runArgs, error) {
	var out runArgs
	var scenarios string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return out, fmt.Errorf("unexpected argument %q after --", args[i+1])
			}
			break
		}
		if len(a) < 2 || a[0] != '-' {
			return out, fmt.Errorf("unexpected argument %q", a)
		}
		name := strings.TrimPrefix(a[1:], "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return out, fmt.Errorf("bad flag syntax %q", a)
		}
		name, value, hasValue := strings.Cut(name, "=")
		takesValue, known := runFlags[name]
		switch {
		case !known:
			return out, fmt.Errorf("flag %q is not a flag of orderflow-audit run", a)
		case !takesValue:
			if hasValue {
				if _, err := strconv.ParseBool(value); err != nil {
					return out, fmt.Errorf("invalid boolean %q for --%s", value, name)
				}
			}
			continue
		case !hasValue:
			if i+1 >= len(args) {
				return out, fmt.Errorf("flag --%s has no value", name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "scenarios":
			scenarios = value
		case "plant":
			out.plant = value
		}
	}
	for _, id := range strings.Split(scenarios, ",") {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(out.scenarios, id) {
			out.scenarios = append(out.scenarios, id)
		}
	}
	return out, nil
}

// selection compares the scenarios of the evidence with those run.args
// selected, and says which boundaries this run leaves unproven.
func (c *checker) selection() {
	ev := c.ev
	present := map[string]bool{}
	for _, sc := range ev.Scenarios {
		present[sc.ID] = true
	}
	args, err := parseRunArgs(ev.Run.Args)
	c.args, c.argsOK = args, err == nil
	// selected == nil: unknown (run.args unreadable).
	var selected map[string]bool
	switch {
	case err != nil:
		c.inconclusive("", "run-args", "run.args %q cannot be read as the arguments of orderflow-audit run (%v): "+
			"which scenarios the run selected is unknown, so a scenario missing from the evidence cannot be detected", ev.Run.Args, err)
	case args.scenarios == nil:
		selected = map[string]bool{}
		for _, id := range spec.DefaultIDs() {
			selected[id] = true
			if !present[id] {
				c.fail(id, "scenario-missing", "run.args select every scenario (no --scenarios), but the evidence has no scenario %s: "+
					"it was deleted, or the run was not the default run its arguments say", id)
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
		for _, id := range args.scenarios {
			selected[id] = true
			if !present[id] {
				c.fail(id, "scenario-missing", "run.args select scenario %s (--scenarios %s), but the evidence has no scenario %s",
					id, strings.Join(args.scenarios, ","), id)
			}
		}
	}
	if selected != nil {
		for _, sc := range ev.Scenarios {
			if !selected[sc.ID] {
				c.fail(sc.ID, "scenario-not-selected", "the evidence has scenario %s, which run.args do not select (--scenarios %s)",
					sc.ID, strings.Join(args.scenarios, ","))
			}
		}
	}
	for _, b := range evidence.ComputeBoundaries(ev.Scenarios) {
		if b.Status != evidence.StatusNotRun {
			continue
		}
		if selected != nil && !selected[b.Scenario] {
			c.inconclusive(b.Scenario, "boundary-not-run", "the %s boundary is unproven in this run: its scenario %s was not selected "+
				"(run.args); nothing about that boundary can be concluded from this evidence", b.Boundary, b.Scenario)
			continue
		}
		c.inconclusive(b.Scenario, "boundary-not-run", "the %s boundary is unproven: its scenario %s did not run", b.Boundary, b.Scenario)
	}
}
