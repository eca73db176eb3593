package reports

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// headingLine and linkTarget find the headings and the internal links of
// a rendered report.
var (
	headingLine = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	linkTarget  = regexp.MustCompile(`\]\(#([^)]+)\)`)
	fenced      = regexp.MustCompile("(?s)```.*?```")
)

// unescape undoes inline's escaping of a heading, giving the text GitHub
// derives the anchor from.
var unescape = strings.NewReplacer(`\\`, `\`, "\\`", "`", `\*`, "*", `\_`, "_", `\[`, "[", `\]`, "]", `\~`, "~", `\|`, "|",
	"&lt;", "<", "&gt;", ">", "&amp;", "&")

// anchorsOf lists the anchors GitHub gives the headings of md, in order,
// a repeated one suffixed -1, -2...
func anchorsOf(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingLine.FindAllStringSubmatch(fenced.ReplaceAllString(md, ""), -1) {
		a := anchor(unescape.Replace(m[1]))
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}

// checkLinks fails for an internal link of md that no heading anchors.
func checkLinks(t *testing.T, name, md string) {
	t.Helper()
	anchors := anchorsOf(md)
	links := linkTarget.FindAllStringSubmatch(md, -1)
	if len(links) == 0 {
		t.Errorf("%s: no internal links", name)
	}
	for _, l := range links {
		if !anchors[l[1]] {
			t.Errorf("%s: link #%s leads to no heading", name, l[1])
		}
	}
}

// TestLinksResolve: every link of the golden renders and of the committed
// report leads to a heading of the same document (the render check also
// checks it in a browser, with pandoc's GitHub identifiers).
func TestLinksResolve(t *testing.T) {
	for _, tc := range goldenCases {
		checkLinks(t, tc.name, string(renderCase(t, tc.dir, tc.verdict)))
	}
	committed, err := os.ReadFile(filepath.Join("u80.md"))
	if err != nil {
		t.Fatal(err)
	}
	checkLinks(t, "u80.md", string(committed))
}

// mermaidLabel is the text of a message or a note in a diagram line.
var mermaidLabel = regexp.MustCompile(`^\s*(?:\S+?(?:->>|-->>|-x)\S+|Note over \S+): (.*)$`)

// maxLabelRunes bounds a label of a diagram: with GitHub's font, a longer
// label between two neighbouring lifelines pushes the diagram past the
// column and scales its text down.
const maxLabelRunes = 48

// TestDiagramLabelsShort: no label of any diagram of the golden renders or
// of the committed report is long, and none carries a run id.
func TestDiagramLabelsShort(t *testing.T) {
	committed, err := os.ReadFile("u80.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{"u80.md": string(committed)}
	for _, tc := range goldenCases {
		docs[tc.name] = string(renderCase(t, tc.dir, tc.verdict))
	}
	for name, md := range docs {
		for _, block := range regexp.MustCompile("(?s)```mermaid\n(.*?)\n```").FindAllStringSubmatch(md, -1) {
			for _, l := range strings.Split(block[1], "\n") {
				m := mermaidLabel.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				if n := len([]rune(m[1])); n > maxLabelRunes {
					t.Errorf("%s: label of %d characters (at most %d): %s", name, n, maxLabelRunes, l)
				}
				if strings.Contains(m[1], "20261201t064651") || strings.Contains(m[1], fixtureRunID) {
					t.Errorf("%s: label carries the run id: %s", name, l)
				}
			}
		}
	}
}

// TestFaultNoteOverTarget: a kill logged by the scenario driver is drawn
// over the actor it names, not over the driver; a fault an actor logs is
// drawn over that actor.
func TestFaultNoteOverTarget(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	ev := func(seq int, actor string, e evidence.Event) logEvent {
		e.Seq, e.Time, e.Actor = int64(seq), t0.Add(time.Duration(seq)*time.Millisecond), actor
		return logEvent{Event: e}
	}
	d := diagram([]logEvent{
		ev(1, "scenario", evidence.Event{Kind: evidence.KindSeedStock, SKU: "S", Stock: evidence.Ptr(int64(1))}),
		ev(2, "relay-a", evidence.Event{Kind: evidence.KindClaim, EventID: "e-1", ClaimVersion: evidence.Ptr(int64(1)), ClaimID: "relay-a-r1", RunID: "r1"}),
		ev(3, "relay-ab", evidence.Event{Kind: evidence.KindClaim, EventID: "e-2", ClaimVersion: evidence.Ptr(int64(1)), ClaimID: "x"}),
		ev(4, "scenario", evidence.Event{Kind: evidence.KindFault, Point: "after-publish-before-mark", Detail: "relay-a process (pid 7) ended by SIGKILL"}),
		ev(5, "relay-ab", evidence.Event{Kind: evidence.KindFault, Point: "p", Detail: "relay relay-a-r1 crashed"}),
		ev(6, "scenario", evidence.Event{Kind: evidence.KindFault, Point: "q", Detail: "nobody named"}),
	})
	body := strings.Join(d.lines, "\n")
	for _, want := range []string{
		"participant a2 as relay-a", "participant a3 as relay-ab",
		"Note over a2: SIGKILL after-publish-before-mark [1]",
		"Note over a3: FAULT p [2]",
		"Note over a1: FAULT q [3]",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("diagram lacks %q:\n%s", want, body)
		}
	}
	if want := []string{"relay-a process (pid 7) ended by SIGKILL", "relay relay-a-r1 crashed", "nobody named"}; strings.Join(d.footnotes, "|") != strings.Join(want, "|") {
		t.Errorf("footnotes %q; want %q", d.footnotes, want)
	}
}

// TestSimilarEventsFolded: a run of similar events is drawn by its first
// and last event around a note that counts the others; a notable event
// breaks the run and is drawn.
func TestSimilarEventsFolded(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	var evs []logEvent
	add := func(e evidence.Event) {
		e.Seq, e.Time, e.Actor = int64(len(evs)+1), t0.Add(time.Duration(len(evs))*time.Millisecond), "orders"
		evs = append(evs, logEvent{Event: e})
	}
	for range 9 {
		add(evidence.Event{Kind: evidence.KindOrderRejected, Status: 409, Reason: "idempotency key in flight"})
	}
	add(evidence.Event{Kind: evidence.KindOrderRejected, Status: 401, Reason: "missing bearer token"})
	for i := range 3 {
		add(evidence.Event{Kind: evidence.KindOrderCommitted, OrderID: evidence.Ptr(int64(i + 1)), EventID: fmt.Sprintf("e-%d", i+1), Stock: evidence.Ptr(int64(9 - i))})
	}
	d := diagram(evs)
	body := strings.Join(d.lines, "\n")
	want := "    Note over a1: HTTP 409: idempotency key in flight\n" +
		"    Note over a1: … 7 more rejections like these\n" +
		"    Note over a1: HTTP 409: idempotency key in flight\n" +
		"    Note over a1: HTTP 401: missing bearer token\n" +
		"    a1->>db: commit order 1 + e-1, stock 9\n    a1->>db: commit order 2 + e-2, stock 8\n    a1->>db: commit order 3 + e-3, stock 7"
	if !strings.HasSuffix(body, want) {
		t.Errorf("diagram ends\n%s\nwant\n%s", body, want)
	}
	if d.drawn != 6 || d.collapsed != 7 || d.drawn+d.collapsed != len(evs) {
		t.Errorf("drawn %d collapsed %d; want 6 and 7 of %d", d.drawn, d.collapsed, len(evs))
	}
}

// TestManyScenarios: a report of about 30 scenarios (the fixture's, each
// repeated under other ids and suites) orders them U80, EXT, U79, gives
// every section its own anchor, links each row to it, and renders the
// same bytes twice.
func TestManyScenarios(t *testing.T) {
	ev := loadEvidence(t, "testdata/u80")
	v := loadVerdict(t, "testdata/u80/verdict-pass.json")
	base := ev.Scenarios
	suites := []string{"U79", "EXT", "U80", "X1"}
	for i := 0; len(ev.Scenarios) < 30; i++ {
		sc := base[i%len(base)]
		sc.ID = fmt.Sprintf("%s%d", sc.ID, i)
		sc.Suite = suites[i%len(suites)]
		ev.Scenarios = append(ev.Scenarios, sc)
	}
	// Two scenarios with the same suite and id get different anchors.
	ev.Scenarios = append(ev.Scenarios, ev.Scenarios[0])
	render := func() []byte {
		md, err := Markdown(ev, v, DirLogs("testdata/u80"))
		if err != nil {
			t.Fatal(err)
		}
		return md
	}
	md := render()
	if !bytes.Equal(md, render()) {
		t.Fatal("two renders differ")
	}
	s := string(md)
	checkLinks(t, "many", s)
	table := section(s, "## Scenarios")
	var suitesSeen []string
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "|" && strings.HasPrefix(f[3], "[") {
			suitesSeen = append(suitesSeen, f[1])
		}
	}
	if len(suitesSeen) != len(ev.Scenarios) {
		t.Fatalf("%d rows; want %d", len(suitesSeen), len(ev.Scenarios))
	}
	rank := map[string]int{"U80": 0, "EXT": 1, "U79": 2, "X1": 3}
	for i := 1; i < len(suitesSeen); i++ {
		if rank[suitesSeen[i]] < rank[suitesSeen[i-1]] {
			t.Fatalf("row %d of suite %s after %s", i+1, suitesSeen[i], suitesSeen[i-1])
		}
	}
	if !strings.Contains(table, "(#u79-tokenmissing)") || !strings.Contains(table, "(#u79-tokenmissing-1)") {
		t.Errorf("the repeated scenario does not get GitHub's -1 anchor")
	}
}

// TestWitnessLine: each section says what the witnesses confirmed (the
// verdict's line for the scenario), that they disagree when a witness rule
// names the scenario, that the verdict was allowed unwitnessed, and, with
// none recorded, that every event is the actors' claim.
func TestWitnessLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(ev *evidence.Evidence, v *checks.Verdict)
		want []string
	}{
		{"confirmed", func(ev *evidence.Evidence, v *checks.Verdict) {}, []string{
			"- **witnesses**: confirmed commit boundary: 1 transaction of 5 row writes, GTID 0-1-"}},
		{"confirmed, the evidence not accepted", func(ev *evidence.Evidence, v *checks.Verdict) { v.Status = checks.Inconclusive },
			[]string{"· witnesses: confirmed</summary>"}},
		{"disagree", func(ev *evidence.Evidence, v *checks.Verdict) {
			v.Status = checks.Fail
			v.Reasons = append(v.Reasons, checks.Reason{Rule: "witness-mark", Status: checks.Fail, Scenario: "sendBeforeMarkCrash",
				Log: "logs/sendBeforeMarkCrash/relay-A.jsonl", Seq: 4, Witness: "GTID 0-1-44 (binlog.000001@9876)", Message: "m"})
		}, []string{"· witnesses: DISAGREE</summary>", "- **witnesses**: disagree with the logs (witness-mark); confirmed",
			"logs/sendBeforeMarkCrash/relay-A.jsonl seq 4, GTID 0-1-44 (binlog.000001@9876)"}},
		{"unwitnessed", func(ev *evidence.Evidence, v *checks.Verdict) {
			v.Witnessed = nil
			v.Unwitnessed = []string{"broker: the external broker's log could not be read"}
		}, []string{"# PASS (unwitnessed): the orderflow-audit reference pipeline", "accepted them UNWITNESSED (--allow-unwitnessed)",
			"- **witnesses**: UNWITNESSED (allowed): broker: the external broker"}},
		{"unwitnessed, the evidence not accepted", func(ev *evidence.Evidence, v *checks.Verdict) {
			v.Status, v.Witnessed, v.Unwitnessed = checks.Inconclusive, nil, []string{"broker: lost"}
		}, []string{"· witnesses: unwitnessed (allowed)</summary>"}},
		{"none recorded", func(ev *evidence.Evidence, v *checks.Verdict) {
			v.Status, v.Witnessed = checks.Inconclusive, nil
			ev.Witness = &evidence.Witness{Missing: []string{"database: x", "broker: y"}}
		}, []string{"· witnesses: none recorded</summary>", "- **witnesses**: none: the evidence records neither"}},
		{"recorded, not confirmed", func(ev *evidence.Evidence, v *checks.Verdict) {
			v.Status, v.Witnessed = checks.Inconclusive, nil
		}, []string{"· witnesses: not confirmed</summary>", "but the verifier could not hold this scenario against them"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := loadEvidence(t, "testdata/u80")
			v := loadVerdict(t, "testdata/u80/verdict-pass.json")
			tc.edit(ev, v)
			md, err := Markdown(ev, v, DirLogs("testdata/u80"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(md), want) {
					t.Errorf("report lacks %q", want)
				}
			}
		})
	}
}
