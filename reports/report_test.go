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
	{"inconclusive", "testdata/u80", "verdict-inconclusive.json"},
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

// TestRenderSections checks what each section of the four fixture renders
// (PASS, FAIL, INCONCLUSIVE, a planted bug) must and must not say. It is
// long because it is one table of cases, one row per claim about a section.
func TestRenderSections(t *testing.T) {
	pass := string(renderCase(t, "testdata/u80", "verdict-pass.json"))
	fail := string(renderCase(t, "testdata/u80", "verdict-fail.json"))
	inconclusive := string(renderCase(t, "testdata/u80", "verdict-inconclusive.json"))
	planted := string(renderCase(t, "testdata/planted", "verdict.json"))

	headings := []string{"## Scenarios", "## Verifier reasons", "## Boundaries", "## Invariants",
		"## Proof boundary", "## Run and environment", "## Scenario sections"}
	for name, md := range map[string]string{"pass": pass, "fail": fail, "inconclusive": inconclusive, "planted": planted} {
		last := -1
		for _, h := range headings {
			i := strings.Index(md, "\n"+h+"\n")
			if h == "## Verifier reasons" && name == "pass" {
				if i >= 0 {
					t.Errorf("pass: has a %q section", h)
				}
				continue
			}
			if i <= last {
				t.Errorf("%s: heading %q at %d, after %d: missing or out of order", name, h, i, last)
			}
			last = i
		}
	}

	const (
		passTitle = "# PASS: the orderflow-audit reference pipeline, suites U79, U80 and EXT, run 20250301t100000z-7f3a"
		failTitle = "# FAIL: the orderflow-audit reference pipeline, suites U79, U80 and EXT, run 20250301t100000z-7f3a"
		incTitle  = "# INCONCLUSIVE: the orderflow-audit reference pipeline, suites U79, U80 and EXT, run 20250301t100000z-7f3a"
	)
	tests := []struct {
		name, md, section string
		want, notWant     []string
	}{
		{name: "pass states the verdict", md: pass, section: passTitle,
			want: []string{"**Why:** The verifier re-derived the 8 scenarios from their 189 logged events, held them against the witnesses",
				"witnesses: database binlog (1 file), broker log (2 files)"},
			notWant: []string{"[!CAUTION]", "NEGATIVE CONTROL"}},
		{name: "fail states the verdict and why", md: fail, section: failTitle,
			want: []string{"**Why:** The verifier did not accept this evidence: metric-mismatch in sendBeforeMarkCrash; log-digest (INCONCLUSIVE) in offsetReplay.",
				"[!CAUTION]", "**Verification FAIL.**", "2 reasons in [Verifier reasons](#verifier-reasons)"}},
		{name: "inconclusive states the verdict and why", md: inconclusive, section: incTitle,
			want: []string{"**Why:** The verifier could not decide from what this evidence holds: witness-missing; boundary-not-run in orderCrashWindow; log-digest in offsetReplay.",
				"[!CAUTION]", "**Verification INCONCLUSIVE.**", "3 reasons"}},
		{name: "fail lists every reason", md: fail, section: "## Verifier reasons",
			want: []string{"metric-mismatch", "log-digest", "INCONCLUSIVE", "logs/sendBeforeMarkCrash/relay-A.jsonl line 4 seq 4, oldTokenCas",
				"[sendBeforeMarkCrash](#u80-sendbeforemarkcrash)"}},
		{name: "fail shows verifier warnings", md: fail, section: "## Verifier reasons",
			want: []string{"- scratch database ofa\\_verify\\_k3x9 could not be dropped: drop it by hand"}},
		{name: "overview links every scenario", md: pass, section: "## Scenarios",
			want: []string{"| suite ", "| key figures ", "[sendBeforeMarkCrash](#u80-sendbeforemarkcrash)", "[tokenMissing](#u79-tokenmissing)",
				"deliveries=2 businessEffects=1 oldTokenCas=0 state=SENT"}},
		{name: "unverified overview", md: fail, section: "## Scenarios",
			want: []string{"| PASS claimed; verifier: FAIL (metric-mismatch) ", "| PASS claimed; verifier: INCONCLUSIVE (log-digest) ",
				"| PASS (claimed, not verified) "}},
		{name: "boundary table", md: pass, section: "## Boundaries",
			want: []string{"| boundary ", "| injection → recovery path ", "| accepted after recovery ", "[txBoundaryRollback](#u80-txboundaryrollback)<br>PASS",
				"deliveries=2 businessEffects=1 oldTokenCas=0 state=SENT"}},
		{name: "unverified boundary status", md: fail, section: "## Boundaries",
			want: []string{"[txBoundaryRollback](#u80-txboundaryrollback)<br>PASS (claimed, not verified)",
				"[sendBeforeMarkCrash](#u80-sendbeforemarkcrash)<br>PASS claimed; verifier: FAIL (metric-mismatch)",
				"[offsetReplay](#u80-offsetreplay)<br>PASS claimed; verifier: INCONCLUSIVE (log-digest)"}},
		{name: "invariants hold: one line, table folded", md: pass, section: "## Invariants",
			want: []string{"All 7 invariants hold, live and replayed", "<details><summary>The 7 invariants", "holds: 0 rows in 7 scenarios"}},
		{name: "replayed violation shown open", md: fail, section: "## Invariants",
			want:    []string{"VIOLATED: 1 row in sendBeforeMarkCrash; 0 rows in 6 other scenarios", "| what a returned row means "},
			notWant: []string{"All 7 invariants hold", "<details>"}},
		{name: "proof matrix as headings and lists", md: pass, section: "## Proof boundary",
			want: []string{"### Real components", "### Fault injection", "### Synthetic parts", "### Not run", "### Not covered by this tool",
				"kfake is not Apache Kafka broker code",
				"after-publish-before-mark (in [sendBeforeMarkCrash](#u80-sendbeforemarkcrash))",
				"ran against the components below: [tokenMissing](#u79-tokenmissing), [txBoundaryRollback](#u80-txboundaryrollback)",
				"- NOT RUN: scenario [orderCrashWindow](#ext-ordercrashwindow) (EXT",
				"`orderflow-audit run --scenarios orderCrashWindow`",
				"- NOT RUN: kill -9 of an actor", "It leaves unproven: recovery from a real process death",
				"<details><summary>What each would need <i>(report)</i> (", "- kill -9 of an actor (SIGKILL of the order service, relay or consumer process mid-operation): a scenario that runs",
				"**retry topics**", "**scheduled-table (due-time) recovery**", "**Kafka transactions**", "**observability metrics**",
				"**deployment evolution**", "**broker disk failure**", "**OS crash / power loss**",
				"the intermediate stock value (after the decrement, before the rollback) was never observed by another connection"},
			notWant: []string{"<br>• ", "| category "}},
		{name: "environment claims are the runner's", md: pass, section: "## Proof boundary",
			want: []string{"Environment claims (database flavour and version, broker implementation) are recorded by the runner and cannot be re-derived from the event logs."}},
		{name: "planted is a negative control", md: planted, section: "# FAIL: the orderflow-audit reference pipeline, suites U79, U80 and EXT, run 20250301t100000z-7f3a",
			want: []string{"[!WARNING]", "**NEGATIVE CONTROL.**", "`mark-without-token`", "planted bug mark-without-token", "1 failed"}},
		{name: "run record counts refuted claims", md: fail, section: "## Run and environment",
			want: []string{"| claimed passes refuted by the verifier ", "| 1 of 7: sendBeforeMarkCrash ",
				"| claimed passes the verifier could not decide ", "| 1 of 7: offsetReplay ", "**not verified**"}},
		{name: "planted: a claimed FAIL is not a refuted pass", md: planted, section: "## Run and environment",
			want: []string{"| claimed passes refuted by the verifier ", "| 0 of 6 "}, notWant: []string{"could not decide"}},
		{name: "verified: no refuted row", md: pass, section: "## Run and environment",
			want:    []string{"```text\nU79 tokenMissing=PASS status=401 writes=0\n", "EXT orderCrashWindow=NOT_RUN\n```", "the verifier recomputed each of them"},
			notWant: []string{"refuted", "could not decide"}},
		{name: "refuted scenario open, titled by the verifier", md: fail, section: "### U80 sendBeforeMarkCrash",
			want: []string{"<details open><summary><b>PASS claimed; verifier: FAIL (metric-mismatch)</b>", "0 rows, stale",
				"- **verifier**: **FAIL (metric-mismatch)**: see [Verifier reasons](#verifier-reasons)"}},
		{name: "undecided scenario open", md: fail, section: "### U80 offsetReplay",
			want: []string{"<details open><summary><b>PASS claimed; verifier: INCONCLUSIVE (log-digest)</b>", "REPLAY receive"}},
		{name: "other claims stay unverified and folded", md: fail, section: "### U80 normalChain",
			want: []string{"<details><summary><b>PASS (claimed, not verified)</b>", "sequenceDiagram",
				"no reason about this scenario, but the evidence as a whole was not accepted (FAIL)"}},
		{name: "planted: failed scenario open", md: planted, section: "### U80 sendBeforeMarkCrash",
			want:    []string{"<details open><summary><b>FAIL</b>", "sequenceDiagram", "mark SENT e-1 v1/11124878-9ed…: 1 row"},
			notWant: []string{"0 rows, stale"}},
		{name: "verified scenario: who checked what", md: pass, section: "### U80 sendBeforeMarkCrash",
			want: []string{"<details><summary><b>PASS</b> <code>U80 sendBeforeMarkCrash=PASS deliveries=2 businessEffects=1 oldTokenCas=0 state=SENT</code></summary>",
				"- **fault** `after-publish-before-mark`: the relay abandoned its work",
				"- **runner**: ran it on the live database and broker: 4 metrics measured; 7 invariants run live (0 rows each)",
				"- **verifier**: re-derived the line and its 4 metrics from the", "all agree",
				"- **witnesses**: confirmed commit boundary: 1 transaction of 5 row writes"},
			notWant: []string{"<br>runner: ran it live"}},
		{name: "stale mark drawn", md: pass, section: "### U80 sendBeforeMarkCrash",
			want: []string{"rect rgb(255, 225, 225)", "0 rows, stale", "FAULT after-publish-before-mark [1]", "expire lease e-1 v1",
				"receive e-1 p0@1", "inbox rejects e-1", "participant a3 as relay-A", "| invariants logged at the end ", "| 0 (holds) "}},
		{name: "the commit boundary's caveat", md: pass, section: "### U80 txBoundaryRollback",
			want: []string{"- **caveat** *(report)*: it does not show that the stock decrement really happened and was rolled back",
				"rollback order 1 + e-1, HTTP 500 [1]"}},
		{name: "replay drawn", md: pass, section: "### U80 offsetReplay",
			want: []string{"REPLAY receive e-1 p0@0", "FAULT after-effect-before-offset-commit"}},
		{name: "long timeline summarised", md: pass, section: "### EXT concurrentRelays",
			want: []string{"more events [", "events not drawn one by one: claim="}},
		{name: "not run", md: pass, section: "### EXT orderCrashWindow",
			want: []string{"<b>NOT RUN</b>", "not run: reachable only with --plant outbox-outside-tx"}, notWant: []string{"sequenceDiagram"}},
		{name: "details", md: pass, section: "### U80 offsetReplay",
			want: []string{"| metric ", "| accepted value ", "| event log ", "logs/offsetReplay/consumer-2.jsonl", "`ofa_7f3a_offsetreplay`, dropped at the end",
				"…", "Hashes are shortened"}},
		{name: "planted keeps the database", md: planted, section: "### U80 sendBeforeMarkCrash",
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

	// The scenarios come U80 first, then EXT, then U79, in the table and
	// in the sections.
	for _, part := range []string{section(pass, "## Scenarios"), section(pass, "## Scenario sections")} {
		u80, ext, u79 := strings.Index(part, "txBoundaryRollback"), strings.Index(part, "concurrentRelays"), strings.Index(part, "tokenMissing")
		if u80 < 0 || !(u80 < ext && ext < u79) {
			t.Errorf("scenario order: U80 at %d, EXT at %d, U79 at %d; want U80 < EXT < U79", u80, ext, u79)
		}
	}
}

// barePass matches a PASS shown as a status (a table cell, a summary, a
// bold word, a title), not a verbatim observation line's "=PASS".
var barePass = regexp.MustCompile(`(\||<br>) ?PASS +\||<b>PASS</b>|\*\*PASS\.?\*\*|# PASS`)

// A report of evidence that fails verification never shows a bare PASS.
func TestUnverifiedNeverPasses(t *testing.T) {
	for _, tc := range goldenCases {
		v := loadVerdict(t, filepath.Join(tc.dir, tc.verdict))
		md := string(renderCase(t, tc.dir, tc.verdict))
		m := barePass.FindString(md)
		if v.Status == checks.Pass {
			if m == "" {
				t.Errorf("%s: a verified report shows no PASS", tc.name)
			}
			continue
		}
		if m != "" {
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
	if tl.Events != 1 || tl.Drawn != 1 || tl.Unreadable != 1 {
		t.Errorf("events %d drawn %d unreadable %d; want 1, 1 and 1", tl.Events, tl.Drawn, tl.Unreadable)
	}
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "- log problem: line 2 of logs/offsetReplay/scenario.jsonl, the final line, is truncated") {
		t.Errorf("render does not show the truncated log:\n%s", section(buf.String(), "## Scenario sections"))
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
