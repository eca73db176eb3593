package reports

import (
	"fmt"
	"html"
	"slices"
	"strconv"
	"strings"
	"time"
)

// boundaries writes the boundary table of the evidence: per boundary the
// scenario that exercises it with its status, the injection and the
// recovery path, and what is accepted beside the figures of this run.
func (p *printer) boundaries() {
	r := p.r
	p.printf("## %s\n\n", headBoundary)
	if len(r.Boundaries) == 0 {
		p.printf("The evidence has no boundary table.\n\n")
		return
	}
	var rows [][]string
	for _, b := range r.Boundaries {
		scenario := cell(b.Scenario)
		if i, ok := r.index(b.Scenario); ok {
			scenario = link(b.Scenario, r.Anchors[i])
		}
		rows = append(rows, []string{cell(b.Boundary), scenario + "<br>" + cell(p.status(b.Scenario, b.Status)),
			cell(b.Injection) + "<br>→ " + cell(b.Recovery), cell(b.AcceptedWhen), cell(orDash(b.Figures))})
	}
	p.tableMD([]string{"boundary", "scenario", "injection → recovery path", "accepted after recovery", "figures of this run"}, rows)
}

// invariants writes the invariants, live and replayed: one line when
// every one holds in every scenario both ways, with the table folded;
// the table open otherwise.
func (p *printer) invariants() {
	p.printf("## %s\n\n", headInvs)
	if len(p.r.Invariants) == 0 {
		p.printf("No invariant results in the evidence or the verdict.\n\n")
		return
	}
	holds := true
	for _, inv := range p.r.Invariants {
		holds = holds && inv.Holds
	}
	intro := "Each invariant is an anti-join that must return no rows. Live: run by the runner against each scenario's " +
		"database at its end. Replayed: run by the verifier on the state replayed from the event logs."
	if holds {
		p.printf("All %d invariants hold, live and replayed, in every scenario that ran them (0 rows each). %s\n\n", len(p.r.Invariants), intro)
		p.printf("<details><summary>The %d invariants and what a returned row would mean</summary>\n\n", len(p.r.Invariants))
	} else {
		p.printf("%s\n\n", intro)
	}
	var rows [][]string
	for _, inv := range p.r.Invariants {
		rows = append(rows, []string{inv.ID, inv.Meaning, inv.Live, inv.Replayed})
	}
	p.table([]string{"id", "what a returned row means", "live result", "replayed result"}, rows)
	if holds {
		p.printf("</details>\n\n")
	}
}

// run folds the record of the run: when, with what, and the observation
// lines exactly as printed.
func (p *printer) run() {
	r := p.r
	env := r.Environment
	p.printf("## %s\n\n", headRun)
	p.printf("<details><summary>Run %s: tool, database, broker, actors and the observation lines as printed</summary>\n\n", html.EscapeString(r.Run.ID))
	actors := "in-process only"
	if env.ActorProcesses {
		actors = "in-process and as separate OS processes"
	}
	args := strings.Join(r.Run.Args, " ")
	if args == "" {
		args = "(none)"
	}
	counts := fmt.Sprintf("%d/%d/%d/%d (total/passed/failed/not run)", r.Counts.Total, r.Counts.Passed, r.Counts.Failed, r.Counts.NotRun)
	if r.Claimed != r.Counts {
		counts += fmt.Sprintf("; the evidence's summary claims %d/%d/%d/%d", r.Claimed.Total, r.Claimed.Passed, r.Claimed.Failed, r.Claimed.NotRun)
	}
	rows := [][]string{
		{"verifier", fmt.Sprintf("%s: %d scenarios, %d events checked; replayed state on %s", r.Verdict.Status, r.Verdict.Scenarios, r.Verdict.Events, orDash(r.Verdict.Engine))},
		{"run id", r.Run.ID},
		{"started, ended (as recorded)", r.Run.Start.Format(time.RFC3339Nano) + ", " + r.Run.End.Format(time.RFC3339Nano)},
		{"interrupted", yesNo(r.Run.Interrupted)},
		{"seed, arguments", strconv.FormatInt(r.Run.Seed, 10) + ", " + args},
		{"tool", fmt.Sprintf("%s %s (revision %s)", r.Tool.Name, r.Tool.Version, orDash(r.Tool.Revision))},
		{"build", buildRow(r.Tool.Build)},
		{"system under test", sutRow(env.SUT)},
		{"database", fmt.Sprintf("%s %s, isolation %s, DSN %s (redacted)", env.Database.Flavour, env.Database.Version, env.Database.Isolation, env.Database.DSN)},
		{"broker", fmt.Sprintf("%s: %s; brokers %s", env.Kafka.Mode, env.Kafka.Implementation, strings.Join(env.Kafka.Brokers, ", "))},
		{"actors", actors},
		{"Go, OS/arch", env.Go + ", " + env.OS + "/" + env.Arch},
		{"scenarios", counts},
	}
	if c := containersRow(env); c != "" {
		at := slices.IndexFunc(rows, func(row []string) bool { return row[0] == "Go, OS/arch" })
		rows = slices.Insert(rows, at, []string{"containers", c})
	}
	if !r.Verified || len(r.Refuted) > 0 {
		rows = append(rows, []string{"claimed passes refuted by the verifier", claimedOf(r.Refuted, r.Counts.Passed)})
	}
	if len(r.Undecided) > 0 {
		rows = append(rows, []string{"claimed passes the verifier could not decide", claimedOf(r.Undecided, r.Counts.Passed)})
	}
	p.table([]string{"field", "value"}, rows)
	if len(r.Lines) > 0 {
		body := strings.Join(r.Lines, "\n")
		fence := fenceFor(body)
		note := "the verifier recomputed each of them"
		if !r.Verified {
			note = "**not verified** (see the verdict above)"
		}
		p.printf("Observation lines as printed by `run` and recorded in the evidence; %s:\n\n%stext\n%s\n%s\n\n", note, fence, body, fence)
	}
	p.printf("</details>\n\n")
}
