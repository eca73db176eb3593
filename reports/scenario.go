package reports

import (
	"fmt"
	"html"
	"slices"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// scenarios writes one section per scenario, in report order.
func (p *printer) scenarios() {
	p.printf("## %s\n\n", headSections)
	p.printf("One section per scenario, in the order of the table above: its observation line, what was checked and by whom, " +
		"its timeline and its details, folded unless the scenario failed or the verifier has reasons about it. A timeline merges " +
		"the scenario's event logs as the verifier does (by time, a tie to the earlier log). Claim tokens read " +
		"`v<claim_version>/<claim_id>` (a run id suffix dropped); `p0@3` is partition 0, offset 3; a mark that hits 0 rows is a " +
		"stale compare-and-set.\n\n")
	for _, i := range p.r.Order {
		p.section(i)
	}
}

// section writes the section of Scenarios[i]: under its heading, one
// folded block whose summary is the status, the observation line and who
// checked it; open, it shows the fault, what the runner, the verifier and
// the witnesses checked, the timeline and (folded) the details. It is
// open from the start when the scenario failed or the verifier has
// reasons about it.
func (p *printer) section(i int) {
	r := p.r
	sc := r.Scenarios[i]
	tl := r.Timelines[i]
	p.printf("### %s\n\n", inline(sectionHeading(sc)))
	open := ""
	if p.mustLook(sc) {
		open = " open"
	}
	p.printf("<details%s><summary><b>%s</b>", open, html.EscapeString(p.status(sc.ID, sc.Status)))
	if sc.Line != "" {
		p.printf(" <code>%s</code>", html.EscapeString(sc.Line))
	}
	if p.quiet(sc) {
		// Who checked it is the first thing the open block says; a
		// clean pass keeps its summary to one line.
		p.printf("</summary>\n\n")
	} else {
		p.printf("<br>%s</summary>\n\n", html.EscapeString(p.checkedShort(sc, tl)))
	}
	head := "boundary " + inline(sc.Boundary)
	if sc.Description != "" {
		head += ": " + inline(sc.Description)
	}
	p.printf("%s\n\n", head)
	for _, f := range p.faults(sc) {
		p.printf("- %s\n", f)
	}
	p.printf("- **runner**: %s\n", inline(p.runnerChecked(sc, tl)))
	p.printf("- **verifier**: %s\n", p.verifierChecked(sc, tl))
	p.printf("- **witnesses**: %s\n\n", inline(p.witnessed(sc)))
	p.timeline(sc, tl)
	p.details(sc)
	p.printf("</details>\n\n")
}

// quiet tells whether a scenario passed with nothing to say in its
// summary: accepted by the verifier, no finding, its fault able to fire.
func (p *printer) quiet(sc evidence.Scenario) bool {
	return sc.Status == evidence.StatusPass && p.r.Verified && !p.mustLook(sc) && !p.unfired(sc)
}

// checkedShort says in one line who checked the scenario and how it went.
func (p *printer) checkedShort(sc evidence.Scenario, tl Timeline) string {
	if sc.Status == evidence.StatusNotRun {
		return "not run: " + orDash(sc.Reason)
	}
	runner := "runner: ran it live"
	verifier := fmt.Sprintf("verifier: re-derived it from %d events", tl.Events)
	f := p.r.Findings[sc.ID]
	switch {
	case len(f.Fail) > 0:
		verifier = "verifier: FAIL (" + strings.Join(f.Fail, ", ") + ")"
	case len(f.Inconclusive) > 0:
		verifier = "verifier: INCONCLUSIVE (" + strings.Join(f.Inconclusive, ", ") + ")"
	case !p.r.Verified:
		verifier = "verifier: did not accept the evidence as a whole"
	}
	out := runner + " · " + verifier + " · witnesses: " + p.witnessShort(sc)
	if p.unfired(sc) {
		out = "its fault cannot fire in this run: it shows the window is absent, not a recovery · " + out
	}
	return out
}

// faultRefs returns how the scenario's fault points were injected, from
// its declaration in spec; nil for a point spec does not declare so.
func faultRefs(sc evidence.Scenario) []spec.FaultRef {
	if s, ok := spec.Lookup(sc.ID); ok && slices.Equal(s.FaultPoints(), sc.FaultPoints) {
		return s.Faults
	}
	return nil
}

// unfired tells whether a fault of a scenario that ran cannot have fired
// in this run: it needs a planted bug the run does not have.
func (p *printer) unfired(sc evidence.Scenario) bool {
	if sc.Status == evidence.StatusNotRun {
		return false
	}
	for _, ref := range faultRefs(sc) {
		if f, ok := spec.LookupFault(ref); ok && f.NeedsPlant != "" && p.r.Run.Planted != f.NeedsPlant {
			return true
		}
	}
	return false
}

// faults says, per fault the scenario declares, how it was injected, from
// the fault table (spec.Faults): a fault that cannot fire in this run says
// so, so that it never reads as evidence of recovery from it.
func (p *printer) faults(sc evidence.Scenario) []string {
	if sc.Status == evidence.StatusNotRun || len(sc.FaultPoints) == 0 {
		return nil
	}
	refs := faultRefs(sc)
	var out []string
	for i, pt := range sc.FaultPoints {
		what := "a fault point this version of the report does not describe"
		if i < len(refs) {
			ref := refs[i]
			f, ok := spec.LookupFault(ref)
			switch {
			case !ok:
			case f.NeedsPlant != "" && p.r.Run.Planted != f.NeedsPlant:
				what = "**did not fire**: " + inline(f.Unreachable) + ". This scenario shows that the window is absent, not how the chain recovers from a fault there"
			case ref.Injection == spec.InjectSignal && !p.r.Environment.ActorProcesses:
				what = "declared as SIGKILL, but the evidence says no actor ran as an OS process"
			default:
				what = inline(f.How)
			}
		}
		out = append(out, fmt.Sprintf("**fault** `%s`: %s", code(pt), what))
		if pt == stockCaveat.label && !p.matrixSays("observed by another connection") {
			out = append(out, fmt.Sprintf("**caveat** *(report)*: it does not show %s; it would need %s", inline(stockCaveat.cannot), inline(stockCaveat.needs)))
		}
	}
	return out
}

// matrixSays tells whether some entry of the proof-boundary matrix
// contains s.
func (p *printer) matrixSays(s string) bool {
	for _, row := range p.r.Proof {
		if mentions(row.Had, s) || mentions(row.CannotInfer, s) {
			return true
		}
	}
	return false
}

// runnerChecked is what the runner did and measured live.
func (p *printer) runnerChecked(sc evidence.Scenario, tl Timeline) string {
	if sc.Status == evidence.StatusNotRun {
		return "did not run it: " + orDash(sc.Reason)
	}
	var bad []string
	for _, inv := range sc.Invariants {
		if inv.Rows != 0 {
			bad = append(bad, fmt.Sprintf("%s=%d", inv.ID, inv.Rows))
		}
	}
	invs := fmt.Sprintf("%d %s run live", len(sc.Invariants), plural(int64(len(sc.Invariants)), "invariant", "invariants"))
	switch {
	case len(bad) > 0:
		invs += " (VIOLATED: " + strings.Join(bad, ", ") + ")"
	case len(sc.Invariants) > 0:
		invs += " (0 rows each)"
	}
	return fmt.Sprintf("ran it on the live database and broker: %d %s measured; %s; %d table %s taken; %d events in %d %s",
		len(sc.Metrics), plural(int64(len(sc.Metrics)), "metric", "metrics"), invs,
		len(sc.Tables), plural(int64(len(sc.Tables)), "digest", "digests"),
		tl.Events, len(sc.Logs), plural(int64(len(sc.Logs)), "log", "logs"))
}

// verifierChecked is what the verifier did with the scenario, as Markdown:
// its reasons when it has any, what it re-derived when it accepted the
// evidence, and otherwise that the evidence as a whole was not accepted.
func (p *printer) verifierChecked(sc evidence.Scenario, tl Timeline) string {
	r := p.r
	f := r.Findings[sc.ID]
	if len(f.Fail)+len(f.Inconclusive) > 0 {
		var parts []string
		if len(f.Fail) > 0 {
			parts = append(parts, "FAIL ("+strings.Join(f.Fail, ", ")+")")
		}
		if len(f.Inconclusive) > 0 {
			parts = append(parts, "INCONCLUSIVE ("+strings.Join(f.Inconclusive, ", ")+")")
		}
		return fmt.Sprintf("**%s**: see [%s](#%s)", inline(strings.Join(parts, "; ")), headReasons, anchor(headReasons))
	}
	if sc.Status == evidence.StatusNotRun {
		return "nothing to re-derive: the scenario did not run"
	}
	var replayed, bad int
	for _, ic := range r.Verdict.Invariants {
		if ic.Scenario == sc.ID {
			replayed++
			if ic.Replayed != 0 {
				bad++
			}
		}
	}
	invs := fmt.Sprintf("replayed %d %s", replayed, plural(int64(replayed), "invariant", "invariants"))
	if bad > 0 {
		invs += fmt.Sprintf(" (%d VIOLATED)", bad)
	} else if replayed > 0 {
		invs += " (0 rows each)"
	}
	did := fmt.Sprintf("re-derived the line and its %d %s from the %d events; %s; compared the %d table %s",
		len(sc.Metrics), plural(int64(len(sc.Metrics)), "metric", "metrics"), tl.Events, invs,
		len(sc.Tables), plural(int64(len(sc.Tables)), "digest", "digests"))
	if r.Verdict.Status == checks.Pass {
		return inline(did) + ": all agree"
	}
	return fmt.Sprintf("no reason about this scenario, but the evidence as a whole was not accepted (%s): see [%s](#%s)",
		inline(string(r.Verdict.Status)), headReasons, anchor(headReasons))
}

// witnessesRecorded says which witnesses the evidence lists.
func (p *printer) witnessesRecorded() string {
	w := p.r.Witness
	if w == nil || (w.Database == nil && w.Broker == nil) {
		return "none recorded"
	}
	var parts []string
	if w.Database != nil {
		parts = append(parts, fmt.Sprintf("database binlog (%d %s)", len(w.Database.Files), plural(int64(len(w.Database.Files)), "file", "files")))
	}
	if w.Broker != nil {
		parts = append(parts, fmt.Sprintf("broker log (%d %s)", len(w.Broker.Files), plural(int64(len(w.Broker.Files)), "file", "files")))
	}
	if len(w.Missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d missing", len(w.Missing)))
	}
	return strings.Join(parts, ", ")
}

// witnessed says what the witnesses (the database's binlog, the broker's
// log) confirmed of this scenario, as the verdict states it, and which of
// the verifier's witness rules disagree.
func (p *printer) witnessed(sc evidence.Scenario) string {
	if sc.Status == evidence.StatusNotRun {
		return "nothing to confirm"
	}
	out := ""
	for _, w := range p.r.Verdict.Witnessed {
		if w.Scenario == sc.ID {
			out = "confirmed " + w.Summary
		}
	}
	if rs := p.witnessRules(sc.ID); len(rs) > 0 {
		out = joinNonEmpty("; ", "disagree with the logs ("+strings.Join(rs, ", ")+")", out)
	}
	if u := p.r.Verdict.Unwitnessed; len(u) > 0 {
		out = joinNonEmpty("; ", out, "UNWITNESSED (allowed): "+strings.Join(u, "; "))
	}
	if out != "" {
		return out
	}
	if w := p.r.Witness; w == nil || (w.Database == nil && w.Broker == nil) {
		return "none: the evidence records neither the database's binlog nor the broker's log, so every event above is the actors' own claim"
	}
	return "recorded (" + p.witnessesRecorded() + "), but the verifier could not hold this scenario against them (see the reasons)"
}

// witnessShort is witnessed in a word or two, for a section's summary.
func (p *printer) witnessShort(sc evidence.Scenario) string {
	switch {
	case sc.Status == evidence.StatusNotRun:
		return "nothing to confirm"
	case len(p.witnessRules(sc.ID)) > 0:
		return "DISAGREE"
	case len(p.r.Verdict.Unwitnessed) > 0:
		return "unwitnessed (allowed)"
	}
	for _, w := range p.r.Verdict.Witnessed {
		if w.Scenario == sc.ID {
			return "confirmed"
		}
	}
	if w := p.r.Witness; w == nil || (w.Database == nil && w.Broker == nil) {
		return "none recorded"
	}
	return "not confirmed"
}

// witnessRules are the witness rules (witness-*) with reasons about the
// scenario.
func (p *printer) witnessRules(id string) []string {
	var out []string
	for _, x := range p.r.Verdict.Reasons {
		if x.Scenario == id && strings.HasPrefix(x.Rule, "witness-") && !contains(out, x.Rule) {
			out = append(out, x.Rule)
		}
	}
	return out
}

// joinNonEmpty joins the non-empty parts with sep.
func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}

// mustLook tells whether a reviewer must look at a scenario: it failed,
// or the verifier has reasons about it. Its section is open from the
// start.
func (p *printer) mustLook(sc evidence.Scenario) bool {
	if sc.Status == evidence.StatusFail {
		return true
	}
	f := p.r.Findings[sc.ID]
	return len(f.Fail)+len(f.Inconclusive) > 0
}

// details folds what a reviewer checks rarely: metrics with their
// acceptance, the logs and table digests (shortened hashes; the full
// values are in the evidence file), database, topics and time.
func (p *printer) details(sc evidence.Scenario) {
	p.printf("<details><summary>Details: metrics, %d event %s, %d table %s</summary>\n\n",
		len(sc.Logs), plural(int64(len(sc.Logs)), "log", "logs"), len(sc.Tables), plural(int64(len(sc.Tables)), "digest", "digests"))
	if sc.Reason != "" {
		p.printf("- reason: %s\n", inline(sc.Reason))
	}
	switch {
	case sc.Database == "":
		p.printf("- database: none recorded\n")
	case sc.Kept:
		p.printf("- database: `%s`, kept (`--keep`)\n", code(sc.Database))
	default:
		p.printf("- database: `%s`, dropped at the end\n", code(sc.Database))
	}
	if len(sc.Topics) > 0 {
		p.printf("- topics: %s\n", inline(strings.Join(sc.Topics, ", ")))
	}
	p.printf("- elapsed: %d ms\n\n", sc.ElapsedMS)
	if len(sc.Metrics) > 0 {
		s, known := spec.Lookup(sc.ID)
		var rows [][]string
		for _, m := range sc.Metrics {
			accept := "not declared by this tool version"
			if known {
				accept = orDash(s.Accept(m.Name))
			}
			rows = append(rows, []string{m.Name, m.Value, accept})
		}
		p.table([]string{"metric", "value", "accepted value"}, rows)
	}
	if len(sc.Logs) > 0 {
		var rows [][]string
		for _, l := range sc.Logs {
			rows = append(rows, []string{l.Path, l.Actor, strconv.FormatInt(l.Lines, 10), shortHash(l.SHA256)})
		}
		p.table([]string{"event log", "actor", "lines", "sha256"}, rows)
	}
	if len(sc.Tables) > 0 {
		var rows [][]string
		for _, t := range sc.Tables {
			rows = append(rows, []string{t.Table, strconv.FormatInt(t.Rows, 10), shortHash(t.SHA256)})
		}
		p.table([]string{"table", "rows", "digest (sha256 of identity columns)"}, rows)
	}
	if len(sc.Logs)+len(sc.Tables) > 0 {
		p.printf("Hashes are shortened; the full values are in the evidence file (`logs[].sha256`, `tables[].sha256` of this scenario).\n\n")
	}
	p.printf("</details>\n\n")
}

// codeSpan makes s one inline code span, with a backtick fence longer
// than any backtick run in it.
func codeSpan(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ")
	fence := strings.Repeat("`", backtickRun(s)+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
