package reports

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Render writes r as GitHub-flavoured Markdown. What a reviewer decides on
// comes first, on one screen: the verdict in the title and why, then one
// row per scenario linking to its section. Then the verifier's reasons,
// the boundary table, the invariants and the proof boundary; the run and
// environment folded; last one section per scenario, whose timeline and
// details are folded unless the scenario is one the reviewer must look at
// (a boundary of the boundary table, or one the verifier has reasons
// about). The first line is Marker; a character from the bundle that a
// terminal would act on is shown escaped (visible).
func Render(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("render report: nil report")
	}
	var buf bytes.Buffer
	p := &printer{w: bufio.NewWriter(&buf), r: r}
	p.w.WriteString(Marker + "\n")
	p.title()
	p.overview()
	p.reasons()
	p.boundaries()
	p.invariants()
	p.proof()
	p.run()
	p.scenarios()
	if p.err != nil {
		return fmt.Errorf("render report: %w", p.err)
	}
	if err := p.w.Flush(); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	if _, err := w.Write(visible(buf.Bytes())); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

// Markdown builds and renders in one call; the out-of-date test of the
// committed report and the CLI use it.
func Markdown(ev *evidence.Evidence, v *checks.Verdict, logs LogSource) ([]byte, error) {
	r, err := Build(ev, v, logs)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Headings of the report's sections; links point at their anchors.
const (
	headScenarios = "Scenarios"
	headReasons   = "Verifier reasons"
	headBoundary  = "Boundaries"
	headInvs      = "Invariants"
	headProof     = "Proof boundary"
	headRun       = "Run and environment"
	headSections  = "Scenario sections"
)

type printer struct {
	w   *bufio.Writer
	r   *Report
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format, args...)
}

// table writes a table of plain-text cells.
func (p *printer) table(header []string, rows [][]string) {
	if p.err != nil {
		return
	}
	p.err = writeTable(p.w, header, rows)
	p.printf("\n")
}

// tableMD writes a table of Markdown cells, escaped by the caller.
func (p *printer) tableMD(header []string, rows [][]string) {
	if p.err != nil {
		return
	}
	p.err = writeTableMD(p.w, header, rows)
	p.printf("\n")
}

// status shows the status of scenario id; a PASS is qualified when the
// verifier did not accept the evidence, so that nothing unverified reads as
// passed, and by the verifier's findings when it has reasons about this
// scenario ("PASS claimed; verifier: FAIL (rule-a, rule-b)").
func (p *printer) status(id, s string) string {
	switch s {
	case evidence.StatusNotRun:
		return "NOT RUN"
	case evidence.StatusPass:
		f := p.r.Findings[id]
		var by []string
		if len(f.Fail) > 0 {
			by = append(by, fmt.Sprintf("%s (%s)", checks.Fail, strings.Join(f.Fail, ", ")))
		}
		if len(f.Inconclusive) > 0 {
			by = append(by, fmt.Sprintf("%s (%s)", checks.Inconclusive, strings.Join(f.Inconclusive, ", ")))
		}
		if len(by) > 0 {
			return "PASS claimed; verifier: " + strings.Join(by, "; ")
		}
		if !p.r.Verified {
			return "PASS (claimed, not verified)"
		}
	}
	return s
}

// title states the verdict and, in one line, why.
func (p *printer) title() {
	r := p.r
	p.printf("# %s: %s\n\n", inline(r.Verdict.StatusLine()), inline(r.Audited))
	p.printf("**Why:** %s\n\n", inline(p.why()))
	if !r.Verified {
		p.printf("> [!CAUTION]\n")
		p.printf("> **Verification %s.** %s (%d %s in [%s](#%s)). "+
			"Nothing in this report is shown as passing: scenario results are the evidence's claims, not verified.\n\n",
			inline(string(r.Verdict.Status)), verdictMeaning(r.Verdict.Status), len(r.Verdict.Reasons),
			plural(int64(len(r.Verdict.Reasons)), "reason", "reasons"), headReasons, anchor(headReasons))
	}
	if r.Run.Planted != "" {
		p.printf("> [!WARNING]\n")
		p.printf("> **NEGATIVE CONTROL.** The bug `%s` was planted into the system under test for this run. "+
			"Failures are expected; this run says nothing about the unmodified system.\n\n", code(r.Run.Planted))
	}
	p.printf("%s\n\n", inline(p.facts()))
}

// why is the verdict's reason in one line: for PASS what was accepted, else
// the verifier's rules and the scenarios they are about.
func (p *printer) why() string {
	r := p.r
	if r.Verdict.Status == checks.Pass {
		held := "held them against the witnesses (the database's binlog, the broker's log)"
		if len(r.Verdict.Unwitnessed) > 0 {
			held = "accepted them UNWITNESSED (--allow-unwitnessed): " + strings.Join(r.Verdict.Unwitnessed, "; ")
		}
		return fmt.Sprintf("The verifier re-derived the %d %s from their %d logged events, %s, and accepted every claim of the evidence.",
			r.Verdict.Scenarios, plural(int64(r.Verdict.Scenarios), "scenario", "scenarios"), r.Verdict.Events, held)
	}
	// One entry per status and rule, with its scenarios, in reason order.
	type group struct {
		status checks.Status
		rule   string
		scs    []string
	}
	var groups []*group
	for _, x := range r.Verdict.Reasons {
		var g *group
		for _, h := range groups {
			if h.status == x.Status && h.rule == x.Rule {
				g = h
			}
		}
		if g == nil {
			g = &group{status: x.Status, rule: x.Rule}
			groups = append(groups, g)
		}
		if x.Scenario != "" && !contains(g.scs, x.Scenario) {
			g.scs = append(g.scs, x.Scenario)
		}
	}
	const shown = 3
	var parts []string
	for i, g := range groups {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more (see %s)", len(groups)-shown, headReasons))
			break
		}
		s := g.rule
		if g.status != r.Verdict.Status {
			s += " (" + string(g.status) + ")"
		}
		if len(g.scs) > 0 {
			s += " in " + strings.Join(g.scs, ", ")
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return verdictMeaning(r.Verdict.Status) + ", and gave no reason."
	}
	return verdictMeaning(r.Verdict.Status) + ": " + strings.Join(parts, "; ") + "."
}

// facts is one line of what ran: run, scenarios, database, broker,
// witnesses.
func (p *printer) facts() string {
	r := p.r
	env := r.Environment
	planted := "clean run"
	if r.Run.Planted != "" {
		planted = "planted bug " + r.Run.Planted
	}
	counts := fmt.Sprintf("%d scenarios: %d passed, %d failed, %d not run", r.Counts.Total, r.Counts.Passed, r.Counts.Failed, r.Counts.NotRun)
	if !r.Verified {
		counts = fmt.Sprintf("%d scenarios: %d passed (claimed), %d failed, %d not run", r.Counts.Total, r.Counts.Passed, r.Counts.Failed, r.Counts.NotRun)
	}
	if r.Run.Interrupted {
		counts += "; the run was interrupted"
	}
	broker := env.Kafka.Mode + " broker"
	if impl := env.Kafka.Implementation; impl != "" {
		broker += " " + strings.Fields(impl)[0]
	}
	return fmt.Sprintf("%s · %s · %s %s · %s · witnesses: %s · tool %s %s",
		planted, counts, env.Database.Flavour, env.Database.Version, broker, p.witnessesRecorded(), r.Tool.Version, orDash(shortRev(r.Tool.Revision)))
}

// verdictMeaning says what a verdict status means, as a sentence.
func verdictMeaning(s checks.Status) string {
	switch s {
	case checks.Pass:
		return "The verifier re-derived the evidence from its event logs and accepted it"
	case checks.Inconclusive:
		return "The verifier could not decide from what this evidence holds"
	case checks.Fail:
		return "The verifier did not accept this evidence"
	}
	return fmt.Sprintf("The verifier returned the unknown status %q", string(s))
}

// overview is the table a reviewer decides on: one row per scenario, U80
// first, then EXT, then U79, each linking to its section.
func (p *printer) overview() {
	r := p.r
	p.printf("## %s\n\n", headScenarios)
	if len(r.Order) == 0 {
		p.printf("The evidence has no scenarios.\n\n")
		return
	}
	var rows [][]string
	for _, i := range r.Order {
		sc := r.Scenarios[i]
		figures := formatMetrics(sc.Metrics)
		if figures == "" {
			figures = "-"
		}
		boundary := sc.Boundary
		if p.unfired(sc) {
			boundary += " (fault cannot fire)"
		}
		rows = append(rows, []string{cell(sc.Suite), link(sc.ID, r.Anchors[i]), cell(boundary),
			cell(p.status(sc.ID, sc.Status)), cell(figures)})
	}
	p.tableMD([]string{"suite", "scenario", "boundary", "status", "key figures"}, rows)
}

// reasons lists every reason of the verifier and its warnings; nothing
// when it has none.
func (p *printer) reasons() {
	r := p.r
	if len(r.Verdict.Reasons) == 0 && len(r.Verdict.Warnings) == 0 {
		return
	}
	p.printf("## %s\n\n", headReasons)
	if len(r.Verdict.Warnings) > 0 {
		p.printf("Warnings of the verification itself (they do not bear on the evidence):\n\n")
		for _, w := range r.Verdict.Warnings {
			p.printf("- %s\n", inline(w))
		}
		p.printf("\n")
	}
	if len(r.Verdict.Reasons) == 0 {
		p.printf("The verifier reported no reasons.\n\n")
		return
	}
	var rr [][]string
	for _, x := range r.Verdict.Reasons {
		where := x.Log
		if x.Line != 0 {
			where += " line " + strconv.FormatInt(x.Line, 10)
		}
		if x.Seq != 0 {
			where += " seq " + strconv.FormatInt(x.Seq, 10)
		}
		for _, more := range []string{x.Field, x.Witness} {
			if more == "" {
				continue
			}
			if where != "" {
				where += ", "
			}
			where += more
		}
		scenario := cell(x.Scenario)
		if i, ok := r.index(x.Scenario); ok {
			scenario = link(x.Scenario, r.Anchors[i])
		}
		rr = append(rr, []string{cell(string(x.Status)), cell(x.Rule), scenario, cell(where), cell(x.Claimed), cell(x.Recomputed), cell(x.Message)})
	}
	p.tableMD([]string{"status", "rule", "scenario", "where", "claimed", "recomputed", "message"}, rr)
}

// formatMetrics renders metrics as an observation line does: name=value
// separated by spaces.
func formatMetrics(ms []evidence.Metric) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Name + "=" + m.Value
	}
	return strings.Join(parts, " ")
}

// claimedOf counts ids among the claimed passes and names them.
func claimedOf(ids []string, passed int) string {
	out := fmt.Sprintf("%d of %d", len(ids), passed)
	if len(ids) > 0 {
		out += ": " + strings.Join(ids, ", ")
	}
	return out
}

func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// containersRow names the images of the containers the run started (the
// full digests are in the evidence and the proof-boundary matrix), or "".
func containersRow(env evidence.Environment) string {
	var parts []string
	engine := ""
	for _, c := range []struct {
		what string
		ctr  *evidence.ContainerEnv
	}{{"database", env.Database.Container}, {"broker", env.Kafka.Container}} {
		if c.ctr == nil {
			continue
		}
		where := "built locally"
		if len(c.ctr.RepoDigests) > 0 {
			where = c.ctr.RepoDigests[0]
		}
		parts = append(parts, fmt.Sprintf("%s: image %s (id %s, %s)", c.what, c.ctr.Image, shortHash(strings.TrimPrefix(c.ctr.ImageID, "sha256:")), where))
		engine = c.ctr.Engine
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + "; engine " + engine
}
