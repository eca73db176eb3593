package reports

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Render writes r as GitHub-flavoured Markdown.
func Render(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("render report: nil report")
	}
	p := &printer{w: bufio.NewWriter(w), r: r}
	p.title()
	p.summary()
	p.lines()
	p.boundaries()
	p.invariants()
	p.proof()
	p.timelines()
	p.details()
	if p.err != nil {
		return fmt.Errorf("render report: %w", p.err)
	}
	if err := p.w.Flush(); err != nil {
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

func (p *printer) table(header []string, rows [][]string) {
	if p.err != nil {
		return
	}
	p.err = writeTable(p.w, header, rows)
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

func (p *printer) title() {
	r := p.r
	p.printf("# orderflow-audit report: run %s\n\n", inline(r.Run.ID))
	if !r.Verified {
		p.printf("> [!CAUTION]\n")
		p.printf("> **Verification %s.** %s (%d %s below). "+
			"Nothing in this report is shown as passing: scenario results are the evidence's claims, not verified.\n\n",
			inline(string(r.Verdict.Status)), verdictMeaning(r.Verdict.Status), len(r.Verdict.Reasons),
			plural(int64(len(r.Verdict.Reasons)), "reason", "reasons"))
	}
	if r.Run.Planted != "" {
		p.printf("> [!WARNING]\n")
		p.printf("> **NEGATIVE CONTROL.** The bug `%s` was planted into the system under test for this run. "+
			"Failures are expected; this run says nothing about the unmodified system.\n\n", code(r.Run.Planted))
	}
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

func (p *printer) summary() {
	r := p.r
	env := r.Environment
	p.printf("## 1. Summary\n\n")
	verdict := string(r.Verdict.Status) + ": " + strings.ToLower(verdictMeaning(r.Verdict.Status)[:1]) + verdictMeaning(r.Verdict.Status)[1:]
	planted := "none (clean run)"
	if r.Run.Planted != "" {
		planted = "NEGATIVE CONTROL: " + r.Run.Planted
	}
	actors := "in-process only"
	if env.ActorProcesses {
		actors = "in-process and as separate OS processes"
	}
	counts := fmt.Sprintf("%d scenarios: %d passed, %d failed, %d not run", r.Counts.Total, r.Counts.Passed, r.Counts.Failed, r.Counts.NotRun)
	if !r.Verified {
		counts = fmt.Sprintf("%d scenarios: %d passed (claimed, not verified), %d failed, %d not run", r.Counts.Total, r.Counts.Passed, r.Counts.Failed, r.Counts.NotRun)
	}
	if r.Claimed != r.Counts {
		counts += fmt.Sprintf(" (the evidence's summary claims %d/%d/%d/%d)", r.Claimed.Total, r.Claimed.Passed, r.Claimed.Failed, r.Claimed.NotRun)
	}
	args := strings.Join(r.Run.Args, " ")
	if args == "" {
		args = "(none)"
	}
	rows := [][]string{
		{"verdict", verdict},
		{"verifier", fmt.Sprintf("%d scenarios, %d events checked; replayed state on %s", r.Verdict.Scenarios, r.Verdict.Events, orDash(r.Verdict.Engine))},
		{"run id", r.Run.ID},
		{"started (as recorded)", r.Run.Start.Format(time.RFC3339Nano)},
		{"ended (as recorded)", r.Run.End.Format(time.RFC3339Nano)},
		{"interrupted", yesNo(r.Run.Interrupted)},
		{"seed", strconv.FormatInt(r.Run.Seed, 10)},
		{"arguments", args},
		{"tool", fmt.Sprintf("%s %s (revision %s)", r.Tool.Name, r.Tool.Version, orDash(r.Tool.Revision))},
		{"database", fmt.Sprintf("%s %s, isolation %s, DSN %s (redacted)", env.Database.Flavour, env.Database.Version, env.Database.Isolation, env.Database.DSN)},
		{"broker", fmt.Sprintf("%s: %s; brokers %s", env.Kafka.Mode, env.Kafka.Implementation, strings.Join(env.Kafka.Brokers, ", "))},
		{"actors", actors},
		{"Go", env.Go},
		{"OS/arch", env.OS + "/" + env.Arch},
		{"planted bug", planted},
		{"scenarios", counts},
	}
	if !r.Verified || len(r.Refuted) > 0 {
		rows = append(rows, []string{"claimed passes refuted by the verifier", claimedOf(r.Refuted, r.Counts.Passed)})
	}
	if len(r.Undecided) > 0 {
		rows = append(rows, []string{"claimed passes the verifier could not decide", claimedOf(r.Undecided, r.Counts.Passed)})
	}
	p.table([]string{"field", "value"}, rows)

	if len(r.Verdict.Warnings) > 0 {
		p.printf("Warnings of the verification itself (they do not bear on the evidence):\n\n")
		for _, w := range r.Verdict.Warnings {
			p.printf("- %s\n", inline(w))
		}
		p.printf("\n")
	}

	p.printf("### Verifier reasons\n\n")
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
		if x.Field != "" {
			if where != "" {
				where += ", "
			}
			where += x.Field
		}
		rr = append(rr, []string{string(x.Status), x.Rule, x.Scenario, where, x.Claimed, x.Recomputed, x.Message})
	}
	p.table([]string{"status", "rule", "scenario", "where", "claimed", "recomputed", "message"}, rr)
}

func (p *printer) lines() {
	p.printf("## 2. Observation lines\n\n")
	if !p.r.Verified {
		p.printf("As printed by `run` and recorded in the evidence; **not verified** (see the verdict above).\n\n")
	} else {
		p.printf("As printed by `run` and recorded in the evidence; the verifier recomputed each of them.\n\n")
	}
	if len(p.r.Lines) == 0 {
		p.printf("The evidence has no observation lines.\n\n")
		return
	}
	body := strings.Join(p.r.Lines, "\n")
	fence := fenceFor(body)
	p.printf("%stext\n%s\n%s\n\n", fence, body, fence)
}

func (p *printer) boundaries() {
	p.printf("## 3. Boundary table\n\n")
	if len(p.r.Boundaries) == 0 {
		p.printf("The evidence has no boundary table.\n\n")
		return
	}
	var rows [][]string
	for _, b := range p.r.Boundaries {
		figures := b.Figures
		if figures == "" {
			figures = "-"
		}
		rows = append(rows, []string{b.Boundary, b.Injection, b.Recovery, b.AcceptedWhen, b.Scenario, p.status(b.Scenario, b.Status), figures})
	}
	p.table([]string{"boundary", "injection", "recovery path", "accepted after recovery", "scenario", "status", "figures of this run"}, rows)
}

func (p *printer) invariants() {
	p.printf("## 4. Invariants\n\n")
	p.printf("Each invariant is an anti-join that must return no rows. Live: run by the runner against each scenario's " +
		"database at its end. Replayed: run by the verifier on the state replayed from the event logs.\n\n")
	if len(p.r.Invariants) == 0 {
		p.printf("No invariant results in the evidence or the verdict.\n\n")
		return
	}
	var rows [][]string
	for _, inv := range p.r.Invariants {
		rows = append(rows, []string{inv.ID, inv.Meaning, inv.Live, inv.Replayed})
	}
	p.table([]string{"id", "what a returned row means", "live result", "replayed result"}, rows)
}

func (p *printer) proof() {
	p.printf("## 5. Proof-boundary matrix\n\n")
	p.printf("Computed from the evidence (environment, run and the scenarios that ran), not written by hand. " +
		"Anything marked NOT RUN did not run and is not a pass.\n\n")
	p.printf("Environment claims (database flavour and version, broker implementation) are recorded by the runner " +
		"and cannot be re-derived from the event logs by the verifier.\n\n")
	if len(p.r.Proof) == 0 {
		p.printf("The evidence has no proof-boundary matrix.\n\n")
		return
	}
	var rows [][]string
	for _, pr := range p.r.Proof {
		rows = append(rows, []string{pr.Category, bullets(pr.Had), bullets(pr.CannotInfer)})
	}
	p.table([]string{"category", "what this run had", "what cannot be inferred"}, rows)
}

// bullets joins entries as lines of one cell ("\n" becomes <br> when the
// cell is escaped).
func bullets(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	return "• " + strings.Join(xs, "\n• ")
}

func (p *printer) timelines() {
	p.printf("## 6. Timelines\n\n")
	p.printf("One sequence diagram per scenario, drawn from its event logs merged as the verifier merges them " +
		"(by time, a tie to the earlier log, each log in file order). " +
		"Claim tokens are shown as `v<claim_version>/<claim_id>` (a claim id or consumer group ending in `-<run id>` without it, " +
		"one longer than 24 characters cut to 12); a mark that hits 0 rows is a stale compare-and-set.\n\n")
	for _, tl := range p.r.Timelines {
		p.printf("### %s: %s\n\n", inline(tl.Scenario), inline(p.status(tl.Scenario, tl.Status)))
		for _, pr := range tl.Problems {
			p.printf("- log problem: %s\n", inline(pr))
		}
		if len(tl.Problems) > 0 {
			p.printf("\n")
		}
		unread := ""
		switch {
		case tl.Unreadable == 1:
			unread = " 1 line of the logs is not a valid event (named above) and is not drawn."
		case tl.Unreadable > 1:
			unread = fmt.Sprintf(" %d lines of the logs are not valid events (named above) and are not drawn.", tl.Unreadable)
		}
		switch {
		case tl.Events == 0 && tl.Status == evidence.StatusNotRun:
			p.printf("Not run: no events.%s\n\n", unread)
			continue
		case tl.Events == 0:
			p.printf("No events to draw.%s\n\n", unread)
			continue
		case tl.Shown == tl.Events:
			p.printf("%d %s, all drawn.%s\n\n", tl.Events, plural(int64(tl.Events), "event", "events"), unread)
		default:
			p.printf("%d events: %d drawn, %d summarised in notes that count them by kind.%s\n\n", tl.Events, tl.Shown, tl.Events-tl.Shown, unread)
		}
		body := strings.Join(tl.Mermaid, "\n")
		fence := fenceFor(body)
		p.printf("%smermaid\n%s\n%s\n\n", fence, body, fence)
	}
}

func (p *printer) details() {
	p.printf("## 7. Details\n\n")
	for _, sc := range p.r.Scenarios {
		p.printf("### %s\n\n", inline(sc.ID))
		p.printf("- suite %s, boundary %s\n", inline(sc.Suite), inline(sc.Boundary))
		p.printf("- status: %s\n", inline(p.status(sc.ID, sc.Status)))
		if sc.Reason != "" {
			p.printf("- reason: %s\n", inline(sc.Reason))
		}
		if sc.Description != "" {
			p.printf("- description: %s\n", inline(sc.Description))
		}
		if len(sc.FaultPoints) > 0 {
			p.printf("- fault points: %s\n", inline(strings.Join(sc.FaultPoints, ", ")))
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
			var rows [][]string
			for _, m := range sc.Metrics {
				rows = append(rows, []string{m.Name, m.Value})
			}
			p.table([]string{"metric", "value"}, rows)
		} else {
			p.printf("No metrics.\n\n")
		}
		if len(sc.Logs) > 0 {
			var rows [][]string
			for _, l := range sc.Logs {
				rows = append(rows, []string{l.Path, l.Actor, strconv.FormatInt(l.Lines, 10), l.SHA256})
			}
			p.table([]string{"event log", "actor", "lines", "sha256"}, rows)
		} else {
			p.printf("No event logs.\n\n")
		}
		if len(sc.Tables) > 0 {
			var rows [][]string
			for _, t := range sc.Tables {
				rows = append(rows, []string{t.Table, strconv.FormatInt(t.Rows, 10), t.SHA256})
			}
			p.table([]string{"table", "rows", "digest (sha256 of identity columns)"}, rows)
		}
	}
}

// writeTable renders one GFM table with tablewriter. Cells are escaped
// first (tablewriter's Markdown renderer does not); headers keep their
// case and nothing wraps, so that every row stays on one line.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
	hs := make([]string, len(header))
	for i, h := range header {
		hs[i] = cell(h)
	}
	t.Header(hs)
	for _, r := range rows {
		if len(r) != len(header) {
			return fmt.Errorf("table row has %d cells; want %d", len(r), len(header))
		}
		cs := make([]string, len(r))
		for i, c := range r {
			cs[i] = cell(c)
		}
		if err := t.Append(cs); err != nil {
			return fmt.Errorf("table row: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	return nil
}

// inlineEscaper escapes text so that Markdown shows it literally: the
// characters that start emphasis, code, links, HTML or entities.
var inlineEscaper = strings.NewReplacer(
	`\`, `\\`,
	"`", "\\`",
	"*", `\*`,
	"_", `\_`,
	"[", `\[`,
	"]", `\]`,
	"~", `\~`,
	"|", `\|`,
	"<", "&lt;",
	">", "&gt;",
	"&", "&amp;",
)

// inline escapes text for a Markdown paragraph or list item (one line).
func inline(s string) string {
	s = strings.ReplaceAll(s, "\r\n", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	return inlineEscaper.Replace(s)
}

// cell escapes text for one table cell: inline escaping, line breaks as
// <br>, and "|" escaped so it does not split the cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	parts := strings.Split(s, "\n")
	for i, x := range parts {
		parts[i] = inlineEscaper.Replace(strings.TrimSpace(x))
	}
	out := strings.Join(parts, "<br>")
	if out == "" {
		return " "
	}
	return out
}

// code makes s safe inside a single-backtick code span.
func code(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "`", "'"), "\n", " ")
}

// fenceFor returns a backtick fence longer than any backtick run in body.
func fenceFor(body string) string {
	longest, run := 0, 0
	for _, c := range body {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// claimedOf counts ids among the claimed passes and names them.
func claimedOf(ids []string, passed int) string {
	out := fmt.Sprintf("%d of %d", len(ids), passed)
	if len(ids) > 0 {
		out += ": " + strings.Join(ids, ", ")
	}
	return out
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
