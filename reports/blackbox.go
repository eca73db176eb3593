package reports

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/bbverify"
	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
)

// maxRuleReasons bounds the reasons listed under one rule of a black-box
// report; the rest are counted (verify --json lists every one).
const maxRuleReasons = 50

// BlackBox renders the verdict on a black-box audit's bundle
// (checks/bbverify) as GitHub-flavoured Markdown: a title naming the
// profile by name and sha256 prefix, what was audited, the bundle's own
// reasons, one section per witness-only rule with its reasons, the notes,
// and the proof boundary: what the audit rests on and what it cannot
// see. Like Render, it begins with Marker and escapes what a terminal
// would act on.
func BlackBox(v *bbverify.Verdict) ([]byte, error) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	w.WriteString(Marker + "\n")
	fmt.Fprintf(w, "# %s: black-box audit of profile %s (sha256 %s)\n\n", v.Status, inline(v.Profile.Name), inline(shortHash12(v.Profile.SHA256)))
	fmt.Fprintf(w, "**Why:** %s\n\n", inline(bbWhy(v)))
	w.WriteString("The verdict rests on the database's binlog, the broker's log and the load client's own history, " +
		"read through the profile found in the bundle; nothing the pipeline says about itself is its basis (docs/blackbox.md).\n\n")
	if err := writeTable(w, []string{"", ""}, bbOverview(v)); err != nil {
		return nil, err
	}
	if err := bbTimeline(w, v); err != nil {
		return nil, err
	}
	bbBundle(w, v)
	if err := bbRules(w, v); err != nil {
		return nil, err
	}
	bbNotes(w, v)
	bbBoundary(w, v)
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return visible(buf.Bytes()), nil
}

func shortHash12(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// bbWhy says in a sentence what the verdict rests on: the failing (or
// inconclusive) rules and bundle reasons, or what passed.
func bbWhy(v *bbverify.Verdict) string {
	count := map[string]int{}
	var order []string
	note := func(rule string, st blackbox.Status) {
		if st != v.Status {
			return
		}
		if count[rule] == 0 {
			order = append(order, rule)
		}
		count[rule]++
	}
	for _, r := range v.Reasons {
		note(r.Rule, r.Status)
	}
	if v.Layer != nil {
		for _, r := range v.Layer.Reasons {
			note(r.Rule, r.Status)
		}
	}
	if v.Status == blackbox.Pass {
		s := v.Layer.Stats
		return fmt.Sprintf("every witness-only rule that applies passed on the run window of database %s and topic %s: %d event(s), %d record(s), %d effect(s)",
			v.Target.Database, v.Target.Topic, s.Events, s.Records, s.Effects)
	}
	var parts []string
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%s (%d)", r, count[r]))
	}
	what := "failed"
	if v.Status == blackbox.Inconclusive {
		what = "could not decide"
	}
	s := fmt.Sprintf("%d rule(s) %s: %s", len(order), what, strings.Join(parts, ", "))
	if v.Layer == nil {
		s += "; the rules did not run: " + v.NotRun
	}
	return s
}

func bbOverview(v *bbverify.Verdict) [][]string {
	bw := v.Window.Binlog
	from := "an empty GTID state"
	if bw.GTIDStart != "" {
		from = "gtid " + bw.GTIDStart
	}
	client := "none: " + v.ClientMissing + " (the answer rule does not apply)"
	if v.ClientRequests != nil {
		client = fmt.Sprintf("%d request(s)", *v.ClientRequests)
	}
	rows := [][]string{
		{"evidence", v.Evidence},
		{"run", fmt.Sprintf("%s, %s to %s", v.RunID, v.Window.Start.UTC().Format(time.RFC3339), v.Window.End.UTC().Format(time.RFC3339))},
		{"profile", fmt.Sprintf("%s (name %s), read from the bundle; sha256 %s", v.Profile.Path, v.Profile.Name, v.Profile.SHA256)},
	}
	if a := v.Profile.About; a != nil {
		// What the profile says the pipeline is: the reader's first
		// question, answered in the profile's own words.
		if a.Text != "" {
			rows = append(rows, []string{"audited", a.Text + " (as the profile describes it)"})
		}
		if len(a.Components) > 0 {
			rows = append(rows, []string{"components", strings.Join(a.Components, "\n")})
		}
	}
	rows = append(rows, [][]string{
		{"target", fmt.Sprintf("database %s, topic %s", v.Target.Database, v.Target.Topic)},
		{"run window", fmt.Sprintf("binlog after %s:%d (%s) to gtid %s; topic from %s", bw.StartFile, bw.StartPos, from, bw.GTIDEnd, startOffsets(v))},
		{"liveness bound", fmt.Sprintf("%s (recorded in the evidence), settled at %s", v.Liveness.Bound, v.Liveness.SettledAt.UTC().Format(time.RFC3339))},
		{"client history", client},
		{"roles' output", fmt.Sprintf("%d file(s), verified, not read", v.Outputs)},
	}...)
	if v.Layer != nil {
		s := v.Layer.Stats
		rows = append(rows, []string{"checked", fmt.Sprintf("%d event(s), %d record(s), %d duplicate(s), %d effect(s), %d unknown answer(s) settled; rules: %s",
			s.Events, s.Records, s.Duplicates, s.Effects, s.Unknown, bbverify.RuleSummary(v.Layer.Rules))})
	}
	return append(rows, []string{"verified at", v.CheckedAt.UTC().Format(time.RFC3339)})
}

func startOffsets(v *bbverify.Verdict) string {
	if len(v.Window.Broker.StartOffsets) == 0 {
		return "offset 0 of every partition"
	}
	var parts []string
	for _, o := range v.Window.Broker.StartOffsets {
		parts = append(parts, fmt.Sprintf("%d:%d", o.Partition, o.Offset))
	}
	return "partition:offset " + strings.Join(parts, " ")
}

// bbTimeline is the story of the first lost event, from the binlog in
// commit order (blackbox.Timeline): what a reader needs to see why the
// rule failed without reading the binlog.
func bbTimeline(w *bufio.Writer, v *bbverify.Verdict) error {
	if v.Layer == nil || v.Layer.Timeline == nil {
		return nil
	}
	t := v.Layer.Timeline
	fmt.Fprintf(w, "\n## How event %s was lost (`%s`)\n\n", inline(t.Event), code(t.Rule))
	w.WriteString("The binlog's transactions that matter to it, in commit order (started: when the transaction began on the server, to the second):\n\n")
	var rows [][]string
	for i, st := range t.Steps {
		rows = append(rows, []string{fmt.Sprint(i + 1), cell(st.GTID), cell(st.Binlog), cell(st.Started), cell(st.What)})
	}
	if err := writeTableMD(w, []string{"#", "gtid", "binlog", "started", "what"}, rows); err != nil {
		return err
	}
	if t.Position != "" {
		fmt.Fprintf(w, "\nNo record of the event is on topic %s; the relay reads rows above its cursor, so a row committed below it is never read again.\n", inline(v.Target.Topic))
	}
	return nil
}

// bbBundle is the section on the bundle itself: its files, window, bound
// and claims.
func bbBundle(w *bufio.Writer, v *bbverify.Verdict) {
	w.WriteString("\n## The bundle\n\n")
	if len(v.Reasons) == 0 {
		w.WriteString("Every file of the bundle (the profile, the witnesses, the client's history, the roles' output) has the size and sha256 " +
			"the evidence records and lies where it belongs, nothing unlisted lies beside them, the liveness bound is within the profile's promise, " +
			"and the claims the audit recorded are the verdict recomputed here.\n")
		return
	}
	for _, r := range v.Reasons {
		fmt.Fprintf(w, "- **%s** `%s`", r.Status, code(r.Rule))
		if r.Path != "" {
			fmt.Fprintf(w, " %s", inline(r.Path))
		}
		fmt.Fprintf(w, ": %s", inline(r.Message))
		if r.Claimed != "" || r.Recomputed != "" {
			fmt.Fprintf(w, " (%s: claimed %s, recomputed %s)", inline(r.Field), inline(orNone(r.Claimed)), inline(orNone(r.Recomputed)))
		}
		w.WriteString("\n")
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// bbRules is the rules' table and one section per rule with its reasons.
func bbRules(w *bufio.Writer, v *bbverify.Verdict) error {
	w.WriteString("\n## The witness-only rules\n\n")
	if v.Layer == nil {
		fmt.Fprintf(w, "Not run: %s.\n", inline(v.NotRun))
		return nil
	}
	byRule := map[string][]blackbox.Reason{}
	for _, r := range v.Layer.Reasons {
		byRule[r.Rule] = append(byRule[r.Rule], r)
	}
	fails := map[string]string{}
	for _, r := range blackbox.Rules {
		fails[r.ID] = r.Fails
	}
	var rows [][]string
	for _, r := range v.Layer.Rules {
		heading := fmt.Sprintf("%s: %s", r.ID, r.Status)
		rows = append(rows, []string{link(r.ID, anchor(heading)), string(r.Status), fmt.Sprint(r.Count), cell(fails[r.ID])})
	}
	if err := writeTableMD(w, []string{"rule", "verdict", "reasons", "fails when"}, rows); err != nil {
		return err
	}
	for _, r := range v.Layer.Rules {
		fmt.Fprintf(w, "\n### %s: %s\n\n", inline(r.ID), r.Status)
		fmt.Fprintf(w, "Fails on %s.\n\n", inline(fails[r.ID]))
		rs := byRule[r.ID]
		switch {
		case r.Status == blackbox.NotApplicable:
			w.WriteString("Not applicable: the profile or the bundle does not ask for it.\n")
		case len(rs) == 0:
			w.WriteString("No reason: the witnesses show nothing against it.\n")
		}
		for i, reason := range rs {
			if i == maxRuleReasons {
				fmt.Fprintf(w, "- … and %d more (verify --json lists every one)\n", len(rs)-maxRuleReasons)
				break
			}
			w.WriteString(reasonItem(reason))
		}
	}
	return nil
}

// reasonItem is one reason of a rule as a list item: its verdict, where
// (transaction and record), and what.
func reasonItem(r blackbox.Reason) string {
	var where []string
	if r.GTID != "" {
		where = append(where, "gtid "+r.GTID+" at "+r.Binlog)
	}
	if r.Topic != "" {
		t := "topic " + r.Topic
		if r.Partition >= 0 {
			t += fmt.Sprintf(" partition %d", r.Partition)
		}
		if r.Offset >= 0 {
			t += fmt.Sprintf(" offset %d", r.Offset)
		}
		where = append(where, t)
	}
	s := fmt.Sprintf("- **%s**", r.Status)
	if len(where) > 0 {
		s += " " + inline(strings.Join(where, "; "))
	}
	return s + ": " + inline(r.Message) + "\n"
}

func bbNotes(w *bufio.Writer, v *bbverify.Verdict) {
	if v.Layer == nil || len(v.Layer.Notes) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Notes\n\nObservations that do not change the verdict (%d): what the profile allows, with what the binlog shows of it.\n\n", len(v.Layer.Notes))
	for i, n := range v.Layer.Notes {
		if i == maxRuleReasons {
			fmt.Fprintf(w, "- … and %d more (verify --json lists every one)\n", len(v.Layer.Notes)-maxRuleReasons)
			break
		}
		w.WriteString(reasonItem(n))
	}
}

// bbBoundary is the proof boundary: what the verdict rests on, the rules
// that did not apply, and what a black-box audit cannot see at all.
func bbBoundary(w *bufio.Writer, v *bbverify.Verdict) {
	w.WriteString("\n## Proof boundary\n\n")
	w.WriteString("What the verdict rests on:\n\n")
	w.WriteString("- the binlog of the run window (row images, transaction boundaries, GTIDs, commit order) and the broker's log " +
		"(records, headers, offsets, committed group offsets), each held to the size and sha256 the evidence records;\n")
	if v.ClientRequests != nil {
		fmt.Fprintf(w, "- the load client's history: %d request(s) and what each was answered;\n", *v.ClientRequests)
	} else {
		w.WriteString("- no client history: whether the pipeline answered its callers truthfully is not checked;\n")
	}
	fmt.Fprintf(w, "- the profile in the bundle (sha256 %s): what it maps and promises chooses the rules.\n", inline(v.Profile.SHA256))
	if v.Layer != nil {
		var na []string
		for _, r := range v.Layer.Rules {
			if r.Status == blackbox.NotApplicable {
				na = append(na, r.ID)
			}
		}
		if len(na) > 0 {
			fmt.Fprintf(w, "\nRules the profile or the bundle does not ask for, so nothing is claimed of them: %s.\n", inline(strings.Join(na, ", ")))
		}
	}
	w.WriteString("\nWhat a black-box audit cannot see, whatever its verdict:\n\n")
	for i, s := range blackbox.OutOfReach {
		end := ";"
		if i == len(blackbox.OutOfReach)-1 {
			end = "."
		}
		fmt.Fprintf(w, "- %s%s\n", inline(s), end)
	}
}
