package bbverify

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
)

// maxNotes bounds the notes (allowed duplicates) the text lists.
const maxNotes = 10

// Title names the audit as the verdict's first line and the report's
// title do: the profile by its name and the first 12 hex digits of its
// sha256, and the run.
func (v *Verdict) Title() string {
	return fmt.Sprintf("the black-box audit of profile %s (sha256 %s), run %s", v.Profile.Name, short(v.Profile.SHA256), v.RunID)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// WriteText renders v for a person: the verdict, what was audited, the
// rules, every reason (failures first) and the notes. Everything in it
// goes through checks.Printable: most of it comes from the bundle judged.
func WriteText(w io.Writer, v *Verdict) error {
	p := checks.Printable
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "orderflow-audit verify: %s for %s\n", v.Status, p(v.Title()))
	fmt.Fprintf(b, "evidence   %s (a black-box audit: the verdict rests on the witnesses and the client's history alone)\n", p(v.Evidence))
	fmt.Fprintf(b, "profile    %s, read from the bundle (sha256 %s)\n", p(v.Profile.Path), p(v.Profile.SHA256))
	fmt.Fprintf(b, "target     database %s, topic %s\n", p(v.Target.Database), p(v.Target.Topic))
	fmt.Fprintf(b, "window     %s\n", p(windowText(v)))
	fmt.Fprintf(b, "liveness   bound %s (recorded in the evidence), settled at %s\n", p(v.Liveness.Bound), v.Liveness.SettledAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(b, "client     %s\n", p(clientText(v)))
	if v.Outputs > 0 {
		fmt.Fprintf(b, "roles      %d output file(s) verified, not read: what the pipeline says of itself is no basis of the verdict\n", v.Outputs)
	}
	if v.Layer == nil {
		fmt.Fprintf(b, "rules      not run: %s\n", p(v.NotRun))
	} else {
		s := v.Layer.Stats
		fmt.Fprintf(b, "checked    %d event(s), %d record(s), %d duplicate(s), %d effect(s), %d unknown answer(s) settled\n",
			s.Events, s.Records, s.Duplicates, s.Effects, s.Unknown)
		fmt.Fprintf(b, "rules      %s\n", RuleSummary(v.Layer.Rules))
	}
	var fails, incs []string
	add := func(st blackbox.Status, line string) {
		if st == blackbox.Fail {
			fails = append(fails, line)
		} else {
			incs = append(incs, line)
		}
	}
	for _, r := range v.Reasons {
		add(r.Status, reasonText(r))
	}
	if v.Layer != nil {
		for _, r := range v.Layer.Reasons {
			add(r.Status, findingText(r))
		}
	}
	for _, g := range []struct {
		title string
		lines []string
	}{{"failed", fails}, {"inconclusive", incs}} {
		if len(g.lines) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n%s (%d):\n", g.title, len(g.lines))
		for _, l := range g.lines {
			b.WriteString(l)
		}
	}
	if v.Layer != nil && len(v.Layer.Notes) > 0 {
		fmt.Fprintf(b, "\nnotes (%d, not failures: the profile allows them):\n", len(v.Layer.Notes))
		for i, n := range v.Layer.Notes {
			if i == maxNotes {
				fmt.Fprintf(b, "  ... and %d more (verify --json lists every one)\n", len(v.Layer.Notes)-maxNotes)
				break
			}
			b.WriteString(findingText(n))
		}
	}
	return b.Flush()
}

// RuleSummary counts the rules by verdict and names those that are not
// PASS: "13 PASS, 1 FAIL (effects), 2 N/A (answer, invariants)".
func RuleSummary(rules []blackbox.RuleResult) string {
	by := map[blackbox.Status][]string{}
	for _, r := range rules {
		by[r.Status] = append(by[r.Status], r.ID)
	}
	var parts []string
	for _, st := range []blackbox.Status{blackbox.Pass, blackbox.Fail, blackbox.Inconclusive, blackbox.NotApplicable} {
		ids := by[st]
		if len(ids) == 0 {
			continue
		}
		part := fmt.Sprintf("%d %s", len(ids), st)
		if st != blackbox.Pass {
			part += " (" + strings.Join(ids, ", ") + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

func windowText(v *Verdict) string {
	bw := v.Window.Binlog
	from := "an empty GTID state"
	if bw.GTIDStart != "" {
		from = "gtid " + bw.GTIDStart
	}
	var offs []string
	for _, o := range v.Window.Broker.StartOffsets {
		offs = append(offs, fmt.Sprintf("%d:%d", o.Partition, o.Offset))
	}
	sort.Strings(offs)
	start := "offset 0 of every partition"
	if len(offs) > 0 {
		start = "partition:offset " + strings.Join(offs, " ")
	}
	return fmt.Sprintf("binlog after %s:%d (%s) to gtid %s; topic from %s; %s to %s", bw.StartFile, bw.StartPos, from, bw.GTIDEnd,
		start, v.Window.Start.UTC().Format(time.RFC3339), v.Window.End.UTC().Format(time.RFC3339))
}

func clientText(v *Verdict) string {
	if v.ClientRequests != nil {
		return fmt.Sprintf("%d request(s) of the load client's history", *v.ClientRequests)
	}
	if v.ClientMissing != "" {
		return "no history: " + v.ClientMissing + " (the answer rule does not apply)"
	}
	return "the history could not be read (see the reasons)"
}

func reasonText(r Reason) string {
	p := checks.Printable
	head := "  [" + p(r.Rule) + "]"
	if r.Path != "" {
		head += " " + p(r.Path)
	}
	s := head + "\n      " + p(r.Message) + "\n"
	if r.Field != "" || r.Claimed != "" || r.Recomputed != "" {
		s += fmt.Sprintf("      %s: claimed %s, recomputed %s\n", p(r.Field), quoted(r.Claimed), quoted(r.Recomputed))
	}
	return s
}

// findingText is one reason of the rules, with where it was found.
func findingText(r blackbox.Reason) string {
	p := checks.Printable
	var where []string
	if r.GTID != "" {
		where = append(where, "gtid "+r.GTID+" at "+r.Binlog)
	}
	if r.Topic != "" {
		w := "topic " + r.Topic
		if r.Partition >= 0 {
			w += fmt.Sprintf(" partition %d", r.Partition)
		}
		if r.Offset >= 0 {
			w += fmt.Sprintf(" offset %d", r.Offset)
		}
		where = append(where, w)
	}
	head := "  [" + p(r.Rule) + "]"
	if len(where) > 0 {
		head += " " + p(strings.Join(where, "; "))
	}
	return head + "\n      " + p(r.Message) + "\n"
}

func quoted(s string) string {
	if s == "" {
		return "(none)"
	}
	return fmt.Sprintf("%q", s)
}
