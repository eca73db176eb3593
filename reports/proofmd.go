package reports

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// proof writes the proof-boundary matrix of the evidence, one heading per
// category with its lists, scenarios linked to their sections; each not-run
// entry says what it would need; then the items the original case lists
// as not covered, which no configuration of this tool runs.
func (p *printer) proof() {
	r := p.r
	p.printf("## %s\n\n", headProof)
	p.printf("Rendered from what the run did, not from what it was configured to do: a fault is listed as had only when its " +
		"injection is in the logs and, where a witness can show it, in the witness (the runner's proof claims, which the verifier " +
		"derives again from the events and the witnesses and holds item by item). Anything NOT RUN did not run and is not a pass. Environment claims (database flavour and version, " +
		"broker implementation) are recorded by the runner and cannot be re-derived from the event logs. " +
		"Text marked *(report)* is the report's own: what a not-run item would need, and the case's items outside the tool's scope.\n\n")
	if len(r.Proof) == 0 {
		p.printf("The evidence has no proof-boundary matrix.\n\n")
	}
	var notRun []string
	for _, row := range r.Proof {
		p.printf("### %s\n\n", inline(capitalize(row.Category)))
		switch row.Category {
		case evidence.CategoryNotRun:
			notRun = row.Had
			p.proofNotRun(row)
		default:
			p.proofLists(row)
		}
	}
	p.proofCase(notRun)
}

// proofLists writes what the run had and what cannot be inferred; under
// fault injection, the commit boundary's caveat when the matrix lacks it.
func (p *printer) proofLists(row evidence.ProofRow) {
	// What the environment was is also in the run's record, and the
	// faults are in each scenario's section: the lists stay one click
	// away so that the page stays short as scenarios are added, and
	// their summaries give the counts.
	p.printf("<details><summary>This run had (%d)</summary>\n\n", len(row.Had))
	p.bullets(row.Had, p.linkScenarios)
	p.printf("</details>\n\n")
	faults := row.Category == evidence.CategoryFaults
	caveat := faults && p.fired(row, stockCaveat.label) && !p.matrixSays("observed by another connection")
	cannot := len(row.CannotInfer)
	if caveat {
		cannot++
	}
	if faults {
		// One limit or more per injected fault: a long list.
		p.printf("<details><summary>What it cannot show (%d)</summary>\n\n", cannot)
		defer p.printf("</details>\n\n")
	} else {
		p.printf("What it cannot show:\n\n")
	}
	if !caveat {
		p.bullets(row.CannotInfer, inline)
		return
	}
	p.bulletsOpen(row.CannotInfer, inline)
	p.printf("- %s: %s *(report: it would need %s)*\n\n", inline(stockCaveat.label), inline(stockCaveat.cannot), inline(stockCaveat.needs))
}

// proofNotRun pairs each not-run entry with what it leaves unproven (the
// matrix lists them in the same order), in view, and says, folded under
// them, what each would need (the report's own advice, which a reader
// looks up rather than reads first).
func (p *printer) proofNotRun(row evidence.ProofRow) {
	if len(row.Had) == 0 {
		p.printf("Nothing: every selected scenario and every fault class this tool knows of ran.\n\n")
		return
	}
	paired := len(row.Had) == len(row.CannotInfer)
	var needs []string
	for i, had := range row.Had {
		item := p.linkScenarios(had)
		if paired {
			item += ". It leaves unproven: " + inline(withoutLabel(row.CannotInfer[i], had))
		}
		if n := p.needs(had); n != "" {
			needs = append(needs, strings.TrimPrefix(p.linkScenarios(had), "NOT RUN: ")+": "+n)
		}
		p.printf("- %s\n", item)
	}
	p.printf("\n")
	if !paired {
		p.printf("What that leaves unproven:\n\n")
		p.bullets(row.CannotInfer, inline)
	}
	if len(needs) > 0 {
		p.printf("<details><summary>What each would need <i>(report)</i> (%d)</summary>\n\n", len(needs))
		for _, n := range needs {
			p.printf("- %s\n", n)
		}
		p.printf("\n</details>\n\n")
	}
}

// needs is what a not-run entry would need to run, as Markdown.
func (p *printer) needs(entry string) string {
	if m := notRunScenario.FindStringSubmatch(entry); m != nil {
		return fmt.Sprintf("a run that selects it where it can run: `orderflow-audit run --scenarios %s`", code(m[1]))
	}
	return inline(neededFor(entry))
}

var notRunScenario = regexp.MustCompile(`^NOT RUN: scenario (\S+) \(`)

// proofCase writes the case's items outside the tool's scope, except
// those the matrix lists already.
func (p *printer) proofCase(notRun []string) {
	var items []outOfScope
	for _, c := range caseNotCovered {
		if !coveredBy(notRun, c.label) {
			items = append(items, c)
		}
	}
	if len(items) == 0 {
		return
	}
	p.printf("### Not covered by this tool\n\n")
	p.printf("*(report)* Listed by the original case as not covered; no scenario of this tool runs them in any configuration, " +
		"so nothing here is shown as passed.\n\n")
	p.printf("<details><summary>The %d items</summary>\n\n", len(items))
	for _, c := range items {
		p.printf("- **%s**: %s. It would need %s.\n", inline(c.label), inline(c.cannot), inline(c.needs))
	}
	p.printf("\n</details>\n\n")
}

// bullets writes xs as a list, each rendered by md; "none" when empty.
func (p *printer) bullets(xs []string, md func(string) string) {
	if len(xs) == 0 {
		p.printf("- none\n\n")
		return
	}
	p.bulletsOpen(xs, md)
	p.printf("\n")
}

// bulletsOpen writes xs as list items without ending the list.
func (p *printer) bulletsOpen(xs []string, md func(string) string) {
	for _, x := range xs {
		p.printf("- %s\n", md(x))
	}
}

// Entries of the matrix that name the scenarios that ran something:
// "<n> scenario(s) ran against the components below: a, b" and
// "<point> (in a, b): how".
var (
	ranList = regexp.MustCompile(`^(\d+ scenario\(s\) ran against the components below: )(.+)$`)
	ranIn   = regexp.MustCompile(`^([^()]*?\(in )([^)]+)(\).*)$`)
	ranNot  = regexp.MustCompile(`^(NOT RUN: scenario )(\S+)( .*)$`)
)

// linkScenarios escapes a matrix entry and links the scenarios it names
// as having run (or not run) to their sections.
func (p *printer) linkScenarios(entry string) string {
	if m := ranList.FindStringSubmatch(entry); m != nil {
		return inline(m[1]) + p.linkIDs(m[2])
	}
	if m := ranIn.FindStringSubmatch(entry); m != nil {
		return inline(m[1]) + p.linkIDs(m[2]) + inline(m[3])
	}
	if m := ranNot.FindStringSubmatch(entry); m != nil {
		return inline(m[1]) + p.linkIDs(m[2]) + inline(m[3])
	}
	return inline(entry)
}

// linkIDs links each of the comma-separated scenario ids to its section.
func (p *printer) linkIDs(list string) string {
	ids := strings.Split(list, ", ")
	for i, id := range ids {
		if j, ok := p.r.index(id); ok {
			ids[i] = link(id, p.r.Anchors[j])
		} else {
			ids[i] = inline(id)
		}
	}
	return strings.Join(ids, ", ")
}

// fired tells whether the fault-injection row lists the fault point as
// fired ("<point> (in ...").
func (p *printer) fired(row evidence.ProofRow, point string) bool {
	for _, h := range row.Had {
		if strings.HasPrefix(h, point+" (in ") {
			return true
		}
	}
	return false
}

// withoutLabel drops the "<label>: " that starts a cannot-infer entry
// when its not-run entry names the label already.
func withoutLabel(cannot, had string) string {
	label, rest, ok := strings.Cut(cannot, ": ")
	if ok && strings.Contains(strings.ToLower(had), strings.ToLower(label)) {
		return rest
	}
	return cannot
}

func mentions(xs []string, s string) bool {
	for _, x := range xs {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
