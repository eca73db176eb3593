package evidence

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// faultRowsOut is the fault-injection row and the entries the not-run
// row takes from it: the declared faults that did not fire.
type faultRowsOut struct {
	faults   ProofRow
	notFired []pair
}

// pair is a not-run entry with what it leaves unproven.
type pair struct{ had, cannot string }

// faultRows lists the faults that fired, by fault-table row, with the
// scenarios they fired in and how often; the declared faults that did not
// fire go to the not-run row, each as what it is: unreachable without its
// planted bug, drawn by the chaos schedule and skipped, or not drawn.
func faultRows(ev *Evidence, ran []Scenario, claims *ProofClaims) faultRowsOut {
	row := ProofRow{Category: CategoryFaults}
	if ev.Run.Planted != "" {
		row.Had = append(row.Had, fmt.Sprintf(
			"NEGATIVE CONTROL: the bug %q was planted into the system under test; failures are expected and show "+
				"that the scenarios and the verifier catch it", ev.Run.Planted))
		row.CannotInfer = append(row.CannotInfer, fmt.Sprintf(
			"anything about the unmodified system: this run had the planted bug %q (a negative control), so it is "+
				"not evidence that the clean design holds", ev.Run.Planted))
	}
	// The faults that fired, with the scenarios they fired in, in
	// first-seen order.
	type use struct {
		ref           spec.FaultRef
		by            []string
		fired, missed int
	}
	var uses []*use
	index := map[spec.FaultRef]*use{}
	var unkilled []string // scenarios that declare a signal without actor processes
	var out faultRowsOut
	for _, sc := range ran {
		var notDrawn []string
		for _, r := range faultRefs(sc) {
			c, _ := claims.Claim(sc.ID, string(r.Point))
			if c.Fired == 0 {
				if p, ok := notFired(ev, sc, r, c); ok {
					out.notFired = append(out.notFired, p)
				} else {
					notDrawn = append(notDrawn, string(r.Point))
				}
				continue
			}
			if r.Injection == spec.InjectSignal && !ev.Environment.ActorProcesses {
				if !slices.Contains(unkilled, sc.ID) {
					unkilled = append(unkilled, sc.ID)
				}
				r.Injection = spec.InjectHook
			}
			u := index[r]
			if u == nil {
				u = &use{ref: r}
				index[r] = u
				uses = append(uses, u)
			}
			if len(u.by) == 0 || u.by[len(u.by)-1] != sc.ID {
				u.by = append(u.by, sc.ID)
			}
			u.fired += c.Fired
			u.missed += c.Missed
		}
		if len(notDrawn) > 0 {
			out.notFired = append(out.notFired, pair{
				fmt.Sprintf("NOT RUN: %s (in %s): declared, but the schedule did not draw %s (the seed and --faults choose)",
					joinAnd(notDrawn), sc.ID, oneOrThese(len(notDrawn), "it", "them")),
				fmt.Sprintf("%s: what %s would have exercised (the fault table says what each simulates)",
					joinAnd(notDrawn), oneOrThese(len(notDrawn), "it", "they"))})
		}
	}
	if len(unkilled) > 0 {
		row.Had = append(row.Had, fmt.Sprintf(
			"SIGKILL declared in %s, but the evidence says no actor ran as an OS process: not counted as a kill",
			strings.Join(unkilled, ", ")))
	}
	if len(uses) == 0 {
		row.Had = append(row.Had, "no fault fired in the scenarios that ran")
	}
	for _, u := range uses {
		had, cannot := describeFault(ev, u.ref)
		how := times(u.fired)
		if u.missed > 0 {
			how += fmt.Sprintf(" (%d of them missed %s aim and struck wherever the process was)", u.missed,
				oneOrThese(u.fired, "its", "their"))
		}
		row.Had = append(row.Had, fmt.Sprintf("%s (in %s), %s: %s", u.ref.Point, strings.Join(u.by, ", "), how, had))
		row.CannotInfer = append(row.CannotInfer, cannot...)
	}
	out.faults = row
	return out
}

// notFired says why a declared fault r of sc did not fire, as a not-run
// entry; false for a nemesis fault the schedule did not draw (listed
// together, per scenario).
func notFired(ev *Evidence, sc Scenario, r spec.FaultRef, c FaultClaim) (pair, bool) {
	p := string(r.Point)
	f, known := spec.LookupFault(r)
	switch {
	case !known:
		return pair{fmt.Sprintf("NOT RUN: %s (in %s): a fault point this tool version does not describe, and it did not fire", p, sc.ID),
			p + ": what this point proves; the tool does not describe it"}, true
	case f.NeedsPlant != "" && ev.Run.Planted != f.NeedsPlant:
		return pair{fmt.Sprintf("NOT RUN: %s (in %s): %s", p, sc.ID, f.Unreachable),
			p + ": how the system recovers from a fault there, since it did not fire in this run (only that the window is absent)"}, true
	case c.Skipped > 0:
		return pair{fmt.Sprintf("NOT RUN: %s (in %s): drawn by the schedule %s and skipped each time: it found nothing to hit "+
			"(no process in the slot, no open transaction, or no server of the run's own to crash)", p, sc.ID, times(c.Skipped)),
			p + ": " + f.Simulates + ", which it stands for, was not exercised"}, true
	case strings.HasPrefix(p, spec.NemesisPrefix):
		return pair{}, false
	}
	return pair{fmt.Sprintf("NOT RUN: %s (in %s): declared, but it did not fire in this run", p, sc.ID),
		p + ": " + f.Simulates + ", which it stands for, was not exercised"}, true
}

// times says how often: "once", "2 times".
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

func oneOrThese(n int, one, these string) string {
	if n == 1 {
		return one
	}
	return these
}

// joinAnd joins xs as a sentence does: "a", "a and b", "a, b and c".
func joinAnd(xs []string) string { return joinWith(xs, " and ") }

// joinOr joins xs as "a", "a or b", "a, b or c".
func joinOr(xs []string) string { return joinWith(xs, " or ") }

func joinWith(xs []string, last string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + last + xs[len(xs)-1]
}

// describeFault says how a fault was injected and what it leaves unproven,
// from the fault table.
func describeFault(ev *Evidence, r spec.FaultRef) (string, []string) {
	p := string(r.Point)
	f, known := spec.LookupFault(r)
	switch {
	case !known:
		return "a fault point this tool version does not describe: how it was injected is not known to the report",
			[]string{p + ": what this point proves; the tool does not describe it"}
	case f.NeedsPlant != "" && ev.Run.Planted != f.NeedsPlant:
		return f.Unreachable, []string{p + ": how the system recovers from a fault there, since it did not fire in this run (only that the window is absent)"}
	case r.Injection == spec.InjectSignal && !strings.HasPrefix(p, spec.NemesisPrefix):
		return f.How, []string{p + " (SIGKILL): " + f.CannotInfer}
	}
	cannot := []string{p + ": " + f.CannotInfer}
	if r.Injection == spec.InjectHook && spec.Killable(r.Point) {
		sim := f.Simulated
		if sim == "" {
			sim = "recovery from a process killed by a signal: the fault was simulated in-process, so no OS process died " +
				"and no connection was dropped by the kernel"
		}
		cannot = append(cannot, p+": "+sim)
	}
	return f.How, cannot
}

func proofSynthetic(ran []Scenario) ProofRow {
	row := ProofRow{Category: CategorySynthetic}
	if len(ran) == 0 {
		row.Had = append(row.Had, "none: no scenario ran")
		return row
	}
	row.Had = append(row.Had,
		"HS256 bearer tokens signed by the tool with a test secret",
		"generated SKUs, quantities, amounts and idempotency keys; stock seeded by each scenario",
		"the JSON payload shape of the outbox intent, defined by this tool (compared by identity fields after parsing)",
		"the notification table as a stand-in for a real downstream service: the effect is a row in the same database as the inbox",
	)
	row.CannotInfer = append(row.CannotInfer,
		"a real identity provider, key rotation or asymmetric token algorithms (RS256, ES256)",
		"production data: real catalogues, hot SKUs, price and rounding rules, data volumes",
		"compatibility with another service's event schema, schema evolution or a schema registry",
		"exactly-once effect on an external system that cannot join the inbox transaction (e-mail, payments): "+
			"such an effect needs its own idempotency key downstream",
	)
	return row
}

func orNone(s string) string {
	if s == "" {
		return "no feature"
	}
	return s
}

// proofNotRun lists what did not run: an interrupted run, the scenarios
// not run, the declared faults that did not fire (notFired), and the fault
// classes that no fault that fired covers (kill -9 actor by actor).
func proofNotRun(ev *Evidence, claims *ProofClaims, notFired []pair) ProofRow {
	row := ProofRow{Category: CategoryNotRun}
	if ev.Run.Interrupted {
		row.Had = append(row.Had, "NOT RUN: the run was interrupted before every selected scenario finished")
		row.CannotInfer = append(row.CannotInfer, "interrupted run: anything about the scenarios that did not finish")
	}
	ran := map[string]bool{}
	for _, sc := range ev.Scenarios {
		if sc.Status != StatusNotRun {
			ran[sc.ID] = true
			continue
		}
		why := sc.Reason
		if why == "" {
			why = "no reason recorded"
		}
		row.Had = append(row.Had, fmt.Sprintf("NOT RUN: scenario %s (%s, boundary %s): %s", sc.ID, sc.Suite, sc.Boundary, why))
		what := sc.Description
		if what == "" {
			what = "what it checks"
		}
		row.CannotInfer = append(row.CannotInfer, fmt.Sprintf("%s (not run): %s", sc.ID, what))
	}
	for _, p := range notFired {
		row.Had = append(row.Had, p.had)
		row.CannotInfer = append(row.CannotInfer, p.cannot)
	}
	fired := map[spec.Point]bool{}
	killed := map[string]bool{}
	if claims != nil {
		for _, c := range claims.Faults {
			if c.Fired > 0 && ran[c.Scenario] {
				fired[spec.Point(c.Point)] = true
				for _, a := range c.Killed {
					killed[a] = true
				}
			}
		}
	}
	for _, c := range spec.NotInjected {
		if slices.ContainsFunc(c.Covers, func(p spec.Point) bool { return fired[p] }) {
			continue
		}
		if c.Key == spec.ClassKill && len(killed) > 0 {
			var rest, done []string
			for _, a := range []string{spec.ActorOrders, spec.ActorRelay, spec.ActorConsumer} {
				if killed[a] {
					done = append(done, "the "+a)
				} else {
					rest = append(rest, "the "+a)
				}
			}
			if len(rest) == 0 {
				continue
			}
			row.Had = append(row.Had, fmt.Sprintf("NOT RUN: kill -9 of %s (SIGKILL mid-operation; only %s %s killed)",
				joinOr(rest), joinAnd(done), oneOrThese(len(done), "was", "were")))
			row.CannotInfer = append(row.CannotInfer, c.Label+": "+c.CannotInfer)
			continue
		}
		row.Had = append(row.Had, c.NotRun)
		row.CannotInfer = append(row.CannotInfer, c.Label+": "+c.CannotInfer)
	}
	return row
}
