package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func loadEvidence(t *testing.T, dir string) *evidence.Evidence {
	t.Helper()
	ev, _, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
	if err != nil {
		t.Fatalf("read evidence: %v", err)
	}
	return ev
}

func loadVerdict(t *testing.T, path string) *checks.Verdict {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v checks.Verdict
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return &v
}

// goldenCases are the fixture renders checked byte for byte and parsed as
// GFM.
var goldenCases = []struct {
	name, dir, verdict string
}{
	{"pass", "testdata/u80", "verdict-pass.json"},
	{"fail", "testdata/u80", "verdict-fail.json"},
	{"planted", "testdata/planted", "verdict.json"},
}

func renderCase(t *testing.T, dir, verdict string) []byte {
	t.Helper()
	ev := loadEvidence(t, dir)
	v := loadVerdict(t, filepath.Join(dir, verdict))
	out, err := Markdown(ev, v, DirLogs(dir))
	if err != nil {
		t.Fatalf("Markdown: %v", err)
	}
	return out
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			got := renderCase(t, tc.dir, tc.verdict)
			again := renderCase(t, tc.dir, tc.verdict)
			if !bytes.Equal(got, again) {
				t.Fatalf("two renders of the same input differ")
			}
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("render differs from %s (run with -update if the change is intended):\n%s", golden, firstDiff(got, want))
			}
		})
	}
}

// firstDiff shows the first differing line.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n got: " + a + "\nwant: " + b
		}
	}
	return "(same lines)"
}

func itoa(i int) string { return i64(evidence.Ptr(int64(i))) }

// section returns the text of the Markdown section that starts with
// heading, up to the next heading of the same level.
func section(md, heading string) string {
	i := strings.Index(md, heading+"\n")
	if i < 0 {
		return ""
	}
	rest := md[i+len(heading)+1:]
	level := heading[:strings.Index(heading, " ")+1]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func TestRenderSections(t *testing.T) {
	pass := string(renderCase(t, "testdata/u80", "verdict-pass.json"))
	fail := string(renderCase(t, "testdata/u80", "verdict-fail.json"))
	planted := string(renderCase(t, "testdata/planted", "verdict.json"))

	headings := []string{"## 1. Summary", "## 2. Observation lines", "## 3. Boundary table", "## 4. Invariants",
		"## 5. Proof-boundary matrix", "## 6. Timelines", "## 7. Details"}
	for name, md := range map[string]string{"pass": pass, "fail": fail, "planted": planted} {
		last := -1
		for _, h := range headings {
			i := strings.Index(md, "\n"+h+"\n")
			if i <= last {
				t.Errorf("%s: heading %q at %d, after %d: missing or out of order", name, h, i, last)
			}
			last = i
		}
	}

	tests := []struct {
		name, md, section string
		want, notWant     []string
	}{
		{name: "pass has no caution", md: pass, section: "# orderflow-audit report: run 20250301t100000z-7f3a",
			notWant: []string{"[!CAUTION]", "NEGATIVE CONTROL"}},
		{name: "fail warns at the top", md: fail, section: "# orderflow-audit report: run 20250301t100000z-7f3a",
			want: []string{"[!CAUTION]", "**Verification FAIL.**", "2 reasons below"}},
		{name: "fail lists every reason", md: fail, section: "### Verifier reasons",
			want: []string{"metric-mismatch", "log-digest", "INCONCLUSIVE", "logs/sendBeforeMarkCrash/relay-A.jsonl line 4 seq 4, oldTokenCas"}},
		{name: "fail shows verifier warnings", md: fail, section: "## 1. Summary",
			want: []string{"- scratch database ofa\\_verify\\_k3x9 could not be dropped: drop it by hand"}},
		{name: "observation lines verbatim", md: pass, section: "## 2. Observation lines",
			want: []string{"```text\nU79 tokenMissing=PASS status=401 writes=0\n",
				"U80 sendBeforeMarkCrash=PASS deliveries=2 businessEffects=1 oldTokenCas=0 state=SENT\n",
				"EXT orderCrashWindow=NOT_RUN\n```"}},
		{name: "boundary figures", md: pass, section: "## 3. Boundary table",
			want: []string{"| boundary ", "| recovery path ", "| accepted after recovery ", "deliveries=2 businessEffects=1 oldTokenCas=0 state=SENT"}},
		{name: "unverified boundary status", md: fail, section: "## 3. Boundary table",
			want: []string{"| txBoundaryRollback  | PASS (claimed, not verified) ",
				"| sendBeforeMarkCrash | PASS claimed; verifier: FAIL (metric-mismatch) ",
				"| offsetReplay        | PASS claimed; verifier: INCONCLUSIVE (log-digest) "}},
		{name: "refuted scenario titled by the verifier", md: fail, section: "### sendBeforeMarkCrash: PASS claimed; verifier: FAIL (metric-mismatch)",
			want: []string{"stale CAS: 0 rows"}},
		{name: "undecided scenario titled by the verifier", md: fail, section: "### offsetReplay: PASS claimed; verifier: INCONCLUSIVE (log-digest)",
			want: []string{"REPLAY receive"}},
		{name: "other claims stay unverified", md: fail, section: "### normalChain: PASS (claimed, not verified)",
			want: []string{"sequenceDiagram"}},
		{name: "refuted in the details", md: fail, section: "## 7. Details",
			want: []string{"- status: PASS claimed; verifier: FAIL (metric-mismatch)\n", "- status: PASS claimed; verifier: INCONCLUSIVE (log-digest)\n"}},
		{name: "summary counts refuted claims", md: fail, section: "## 1. Summary",
			want: []string{"| claimed passes refuted by the verifier ", "| 1 of 7: sendBeforeMarkCrash ",
				"| claimed passes the verifier could not decide ", "| 1 of 7: offsetReplay "}},
		{name: "planted: a claimed FAIL is not a refuted pass", md: planted, section: "## 1. Summary",
			want: []string{"| claimed passes refuted by the verifier ", "| 0 of 6 "}, notWant: []string{"could not decide"}},
		{name: "verified: no refuted row", md: pass, section: "## 1. Summary",
			notWant: []string{"refuted", "could not decide"}},
		{name: "planted: both rules of a claimed FAIL", md: planted, section: "### sendBeforeMarkCrash: FAIL",
			want: []string{"sequenceDiagram"}},
		{name: "replayed violation", md: fail, section: "## 4. Invariants",
			want: []string{"VIOLATED: 1 row in sendBeforeMarkCrash; 0 rows in 6 other scenarios", "holds: 0 rows in 7 scenarios"}},
		{name: "proof matrix computed", md: pass, section: "## 5. Proof-boundary matrix",
			want: []string{"kfake is not Apache Kafka broker code", "NOT RUN: scenario orderCrashWindow", "NOT RUN: kill -9 of an actor", "<br>• "}},
		{name: "environment claims are the runner's", md: pass, section: "## 5. Proof-boundary matrix",
			want: []string{"Environment claims (database flavour and version, broker implementation) are recorded by the runner and cannot be re-derived from the event logs by the verifier.\n"}},
		{name: "planted is a negative control", md: planted, section: "# orderflow-audit report: run 20250301t100000z-7f3a",
			want: []string{"[!WARNING]", "**NEGATIVE CONTROL.**", "`mark-without-token`"}},
		{name: "planted summary", md: planted, section: "## 1. Summary",
			want: []string{"NEGATIVE CONTROL: mark-without-token", "1 failed"}},
		{name: "stale mark drawn", md: pass, section: "### sendBeforeMarkCrash: PASS",
			want: []string{"rect rgb(255, 225, 225)", "stale CAS: 0 rows", "FAULT after-publish-before-mark", "expired by SQL",
				"receive e-1: p0 offset 1", "inbox rejects duplicate e-1", "participant a3 as relay-A"}},
		{name: "replay drawn", md: pass, section: "### offsetReplay: PASS",
			want: []string{"REPLAY receive e-1: p0 offset 0", "FAULT after-effect-before-offset-commit"}},
		{name: "planted stale mark succeeded", md: planted, section: "### sendBeforeMarkCrash: FAIL",
			want: []string{"token v1/11124878-9ed…: 1 row"}, notWant: []string{"stale CAS"}},
		{name: "long timeline summarised", md: pass, section: "### concurrentRelays: PASS",
			want: []string{"events: 30 drawn,", "events summarised (counts by kind: claim="}},
		{name: "not run has no events", md: pass, section: "### orderCrashWindow: NOT RUN",
			want: []string{"Not run: no events."}},
		{name: "details", md: pass, section: "## 7. Details",
			want: []string{"| metric ", "| event log ", "logs/offsetReplay/consumer-2.jsonl", "`ofa_7f3a_offsetreplay`, dropped at the end"}},
		{name: "planted keeps the database", md: planted, section: "## 7. Details",
			want: []string{"`ofa_7f3a_sendbeforemarkcrash`, kept"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := section(tt.md, tt.section)
			if s == "" {
				t.Fatalf("section %q not found", tt.section)
			}
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("section %q lacks %q", tt.section, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(s, w) {
					t.Errorf("section %q contains %q", tt.section, w)
				}
			}
		})
	}
}

var barePass = regexp.MustCompile(`\| PASS +\||: PASS\n|status: PASS\n`)

// A report of evidence that fails verification never shows a bare PASS.
func TestUnverifiedNeverPasses(t *testing.T) {
	for _, tc := range goldenCases {
		v := loadVerdict(t, filepath.Join(tc.dir, tc.verdict))
		if v.Status == checks.Pass {
			continue
		}
		md := string(renderCase(t, tc.dir, tc.verdict))
		body := md[strings.Index(md, "## 2. Observation lines"):]
		body = strings.Replace(body, section(body, "## 2. Observation lines"), "", 1) // lines are verbatim claims
		if m := barePass.FindString(body); m != "" {
			t.Errorf("%s: unverified report contains %q", tc.name, m)
		}
	}
}

// fakeLogs serves each log's bytes from memory, or fails to open it.
type fakeLogs map[string]struct {
	data []byte
	err  error
}

func (f fakeLogs) Open(ref evidence.LogRef) (io.ReadCloser, error) {
	x, ok := f[ref.Path]
	if !ok {
		return nil, errors.New("no such log")
	}
	if x.err != nil {
		return nil, x.err
	}
	return io.NopCloser(bytes.NewReader(x.data)), nil
}

func TestBuildLogProblems(t *testing.T) {
	ev := loadEvidence(t, "testdata/u80")
	v := loadVerdict(t, "testdata/u80/verdict-pass.json")
	var sc evidence.Scenario
	for _, s := range ev.Scenarios {
		if s.ID == "offsetReplay" {
			sc = s
		}
	}
	full, err := evidence.ReadEvents(filepath.Join("testdata/u80", sc.Logs[0].Path))
	if err != nil || len(full) < 2 {
		t.Fatalf("read %s: %d events, %v", sc.Logs[0].Path, len(full), err)
	}
	second := encodeLines(full[1])
	logs := fakeLogs{
		sc.Logs[0].Path: {data: append(encodeLines(full[0]), second[:len(second)/2]...)},
		sc.Logs[1].Path: {err: errors.New("permission denied")},
	}
	r, err := Build(&evidence.Evidence{Scenarios: []evidence.Scenario{sc}, Tool: ev.Tool, Run: ev.Run, Environment: ev.Environment}, v, logs)
	if err != nil {
		t.Fatal(err)
	}
	tl := r.Timelines[0]
	if len(tl.Problems) < 3 {
		t.Fatalf("problems = %q; want the truncated log, the unreadable one and the missing ones", tl.Problems)
	}
	if !strings.Contains(tl.Problems[0], "truncated") || !strings.Contains(tl.Problems[1], "permission denied") {
		t.Errorf("problems = %q", tl.Problems)
	}
	if tl.Events != 1 || tl.Shown != 1 || tl.Unreadable != 1 {
		t.Errorf("events %d shown %d unreadable %d; want 1, 1 and 1", tl.Events, tl.Shown, tl.Unreadable)
	}
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "- log problem: line 2 of logs/offsetReplay/scenario.jsonl, the final line, is truncated") {
		t.Errorf("render does not show the truncated log:\n%s", section(buf.String(), "## 6. Timelines"))
	}

	r, err = Build(ev, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Timelines[1].Problems; len(p) != 1 || !strings.Contains(p[0], "not available") {
		t.Errorf("without logs: problems %q", p)
	}
}

func TestFromFile(t *testing.T) {
	v := loadVerdict(t, "testdata/u80/verdict-pass.json")
	got, err := FromFile("testdata/u80/evidence.json", v)
	if err != nil {
		t.Fatalf("FromFile: %v", err)
	}
	want, err := os.ReadFile("testdata/pass.golden")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("FromFile differs from pass.golden:\n%s", firstDiff(got, want))
	}
	for _, path := range []string{"testdata/missing.json", "testdata/u80/logs/offsetReplay/orders.jsonl"} {
		if _, err := FromFile(path, v); !errors.Is(err, evidence.ErrBadInput) {
			t.Errorf("FromFile(%q) = %v; want ErrBadInput", path, err)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	ev := loadEvidence(t, "testdata/u80")
	if _, err := Build(nil, &checks.Verdict{}, nil); err == nil {
		t.Error("Build(nil evidence): no error")
	}
	if _, err := Build(ev, nil, nil); err == nil {
		t.Error("Build(nil verdict): no error")
	}
	if err := Render(&bytes.Buffer{}, nil); err == nil {
		t.Error("Render(nil): no error")
	}
	if _, err := DirLogs("testdata/u80").Open(evidence.LogRef{Path: "../u80/evidence.json"}); err == nil {
		t.Error("DirLogs read a path outside its directory")
	}
}

// TestDirLogsConfined: DirLogs reads only regular files that are inside
// the evidence directory once symbolic links are resolved; anything else is
// refused before it is opened, and the timeline says so.
func TestDirLogsConfined(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "evidence")
	outside := filepath.Join(root, "outside")
	secret := encodeLines(evidence.Event{Seq: 1, Time: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC), Actor: "x",
		Kind: evidence.KindFault, Point: "SECRET-OUTSIDE", Detail: "read from outside"})
	inside := encodeLines(evidence.Event{Seq: 1, Time: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC), Actor: "relay-a",
		Kind: evidence.KindFault, Point: "inside", Detail: "ok"})
	for _, d := range []string{filepath.Join(dir, "logs", "s"), filepath.Join(dir, "other"), filepath.Join(dir, "logs", "s", "dir.jsonl"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret.jsonl"), secret)
	write(filepath.Join(dir, "logs", "s", "plain.jsonl"), inside)
	write(filepath.Join(dir, "other", "real.jsonl"), inside)
	link(filepath.Join(outside, "secret.jsonl"), "logs/s/absolute.jsonl")
	link("../../../outside/secret.jsonl", "logs/s/relative.jsonl")
	link(outside, "logs/out")
	link("../../other/real.jsonl", "logs/s/inside-link.jsonl")
	link("nowhere.jsonl", "logs/s/dangling.jsonl")
	if err := syscall.Mkfifo(filepath.Join(dir, "logs", "s", "fifo.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	// unblockFIFO lets an open of the FIFO for reading return (a test
	// that hangs on it fails instead).
	unblockFIFO := func() {
		if w, err := os.OpenFile(filepath.Join(dir, "logs", "s", "fifo.jsonl"), os.O_WRONLY, 0); err == nil {
			w.Close()
		}
	}
	viaLink := filepath.Join(root, "evidence-link")
	if err := os.Symlink(dir, viaLink); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		dir, path string
		refused   bool // errors.Is(err, ErrRefused)
		ok        bool
		want      string
	}{
		{dir: dir, path: "logs/s/plain.jsonl", ok: true},
		{dir: dir, path: "logs/s/inside-link.jsonl", ok: true},
		{dir: viaLink, path: "logs/s/plain.jsonl", ok: true},
		{dir: dir, path: "logs/s/absolute.jsonl", refused: true, want: "outside the evidence directory"},
		{dir: dir, path: "logs/s/relative.jsonl", refused: true, want: "outside the evidence directory"},
		{dir: dir, path: "logs/out/secret.jsonl", refused: true, want: "outside the evidence directory"},
		{dir: viaLink, path: "logs/s/relative.jsonl", refused: true, want: "outside the evidence directory"},
		{dir: dir, path: "../outside/secret.jsonl", refused: true, want: "not inside the evidence directory"},
		{dir: dir, path: "logs/s/fifo.jsonl", refused: true, want: "not a regular file"},
		{dir: dir, path: "logs/s/dir.jsonl", refused: true, want: "not a regular file"},
		{dir: dir, path: "logs/s/dangling.jsonl", want: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			type result struct {
				rc  io.ReadCloser
				err error
			}
			done := make(chan result, 1)
			go func() {
				rc, err := DirLogs(tt.dir).Open(evidence.LogRef{Path: tt.path})
				done <- result{rc, err}
			}()
			var res result
			select {
			case res = <-done:
			case <-time.After(5 * time.Second):
				unblockFIFO()
				res = <-done
				t.Fatalf("Open(%q) blocked", tt.path)
			}
			if res.err == nil {
				defer res.rc.Close()
				data, _ := io.ReadAll(res.rc)
				if !tt.ok {
					t.Fatalf("Open(%q) read %q; want it refused", tt.path, data)
				}
				if !bytes.Equal(data, inside) {
					t.Errorf("Open(%q) read %q; want %q", tt.path, data, inside)
				}
				return
			}
			if tt.ok {
				t.Fatalf("Open(%q) = %v; want it read", tt.path, res.err)
			}
			if errors.Is(res.err, ErrRefused) != tt.refused || !strings.Contains(res.err.Error(), tt.want) {
				t.Errorf("Open(%q) = %v; want refused=%v and %q", tt.path, res.err, tt.refused, tt.want)
			}
		})
	}

	// The timeline names the refusal and never draws what is outside.
	sc := evidence.Scenario{ID: "s", Status: evidence.StatusPass, Logs: []evidence.LogRef{
		{Path: "logs/s/plain.jsonl", Actor: "relay-a"}, {Path: "logs/s/absolute.jsonl", Actor: "x"}, {Path: "logs/s/fifo.jsonl", Actor: "x"}}}
	built := make(chan Timeline, 1)
	go func() { built <- buildTimeline(sc, DirLogs(dir)) }()
	var tl Timeline
	select {
	case tl = <-built:
	case <-time.After(5 * time.Second):
		unblockFIFO()
		<-built
		t.Fatal("the timeline blocked on a FIFO")
	}
	all := strings.Join(tl.Problems, "\n")
	if tl.Events != 1 || strings.Contains(strings.Join(tl.Mermaid, "\n"), "SECRET-OUTSIDE") {
		t.Errorf("timeline drew %d events:\n%s", tl.Events, strings.Join(tl.Mermaid, "\n"))
	}
	for _, want := range []string{"logs/s/absolute.jsonl: not read: refused", "logs/s/fifo.jsonl: not read: refused"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
}

// TestStatusByVerifier: a claimed PASS is titled by the verifier's
// findings about its scenario, rules distinct and sorted.
func TestStatusByVerifier(t *testing.T) {
	v := &checks.Verdict{Status: checks.Fail, Reasons: []checks.Reason{
		{Rule: "rule-b", Status: checks.Fail, Scenario: "a"},
		{Rule: "rule-a", Status: checks.Fail, Scenario: "a"},
		{Rule: "rule-b", Status: checks.Fail, Scenario: "a"},
		{Rule: "rule-c", Status: checks.Inconclusive, Scenario: "a"},
		{Rule: "rule-c", Status: checks.Inconclusive, Scenario: "b"},
		{Rule: "run-wide", Status: checks.Fail},
		{Rule: "scenario-failed", Status: checks.Fail, Scenario: "d"},
	}}
	ev := &evidence.Evidence{Scenarios: []evidence.Scenario{
		{ID: "a", Status: evidence.StatusPass}, {ID: "b", Status: evidence.StatusPass},
		{ID: "c", Status: evidence.StatusPass}, {ID: "d", Status: evidence.StatusFail}, {ID: "e", Status: evidence.StatusNotRun},
	}}
	r, err := Build(ev, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Refuted, []string{"a"}) || !slices.Equal(r.Undecided, []string{"b"}) {
		t.Errorf("refuted %q undecided %q; want [a] and [b]", r.Refuted, r.Undecided)
	}
	p := &printer{r: r}
	want := map[string]string{
		"a": "PASS claimed; verifier: FAIL (rule-a, rule-b); INCONCLUSIVE (rule-c)",
		"b": "PASS claimed; verifier: INCONCLUSIVE (rule-c)",
		"c": "PASS (claimed, not verified)",
		"d": "FAIL",
		"e": "NOT RUN",
	}
	for _, sc := range ev.Scenarios {
		if got := p.status(sc.ID, sc.Status); got != want[sc.ID] {
			t.Errorf("status(%q, %q) = %q; want %q", sc.ID, sc.Status, got, want[sc.ID])
		}
	}
}
