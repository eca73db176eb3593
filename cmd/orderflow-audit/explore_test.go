package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64
	}{
		{"7", []int64{7}},
		{"1..3", []int64{1, 2, 3}},
		{"5,1..2,5", []int64{5, 1, 2}},
	} {
		got, err := parseSeeds(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseSeeds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "0", "3..1", "a", "1..", "1..b", "-2"} {
		if _, err := parseSeeds(bad); err == nil {
			t.Errorf("parseSeeds(%q) accepted", bad)
		}
	}
}

func TestExploreBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--seeds", "0"},
		{"--seeds", "5..3"},
		{"--faults", "kill,nope"},
		{"--progress", "sometimes"},
		{"--orders", "0"},
		{"--inboxes", "0"},
		{"--inboxes", "5"},
		{"--duration", "1ms"},
		{"--plant", "no-such-bug"},
		{"--only-faults", "0,2"},
		{"stray"},
	} {
		code, _, stderr := runCLI(t, append([]string{"explore", "--out-dir", t.TempDir()}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "explore") {
			t.Errorf("explore %v: exit %d, stderr %q; want exit 2 naming the problem", args, code, stderr)
		}
	}
}

// TestExploreInterruptLeavesNothing: Ctrl-C in the middle of a seed's run
// stops explore after the run's cleanup: exit 4, no actor process and no
// private server left, the server's directory and the seed's working
// directory removed.
func TestExploreInterruptLeavesNothing(t *testing.T) {
	infratest.RequireMariaDB(t)
	if testing.Short() {
		t.Skip("runs a chaos scenario")
	}
	tmp, out := t.TempDir(), t.TempDir()
	binary(t)
	t.Setenv("TMPDIR", tmp)
	p := startProc(t, "explore", "--seeds", "1..3", "--duration", "3s", "--progress", "off", "--out-dir", out)
	deadline := time.Now().Add(60 * time.Second)
	for len(actorsOf(out)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no actor process of the exploration within 60 s; stderr:\n%s", p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // in the middle of the faults
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, 30*time.Second)
	if code != exitInconclusive {
		t.Errorf("exit %d after SIGINT; want %d; stderr:\n%s", code, exitInconclusive, p.stderr.String())
	}
	if pids := actorsOf(out); len(pids) > 0 {
		t.Errorf("actor processes left: %v", pids)
	}
	privateGone(t, tmp)
	es, _ := os.ReadDir(out)
	for _, e := range es {
		t.Errorf("left in --out-dir: %s", e.Name())
	}
}

// actorsOf lists the pids of processes whose command line names dir (the
// actors log into it).
func actorsOf(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), dir) && strings.Contains(string(b), "actor") {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}

// TestShrink: with a run that fails (rule r) exactly when the schedule
// holds fault #3 and at least 4 orders, shrinking keeps fault #3 alone, cuts
// the duration to just after it and halves the orders down to what still
// fails.
func TestShrink(t *testing.T) {
	c := nemesis.Config{Seed: 5, Duration: 10 * time.Second}
	c.SetDefaults()
	all := nemesis.Schedule(c)
	if len(all) < 5 {
		t.Fatalf("seed 5 has %d faults; the test needs 5", len(all))
	}
	runs := 0
	fake := func(_ context.Context, c nemesis.Config) seedResult {
		runs++
		has3 := slices.ContainsFunc(nemesis.Schedule(c), func(f nemesis.Fault) bool { return f.N == 3 })
		if has3 && c.Orders >= 4 {
			return seedResult{status: statusFail, rules: []string{"r"}}
		}
		return seedResult{status: statusPass}
	}
	var stderr strings.Builder
	x := &exploration{subject: chaosSubject{}, stderr: &stderr, bar: &progressBar{}}
	s := &shrinker{x: x, run: fake, seed: 5, rule: "r", budget: 80, best: c}
	s.shrink(context.Background())
	got := nemesis.Schedule(s.best)
	if len(got) != 1 || got[0].N != 3 {
		t.Fatalf("shrunk schedule %v; want fault #3 alone\n%s", got, stderr.String())
	}
	if want := (all[2].At + all[2].For + 300*time.Millisecond).Round(100 * time.Millisecond); s.best.Duration != max(want, time.Second) {
		t.Errorf("duration %v; want %v", s.best.Duration, max(want, time.Second))
	}
	if s.best.Orders != 5 { // 40, 20, 10, 5 fail; 2 passes
		t.Errorf("orders %d; want 5", s.best.Orders)
	}
	if s.runs != runs || runs > 80 {
		t.Errorf("%d runs counted, %d made", s.runs, runs)
	}
	args := strings.Join(replayArgs(5, s.best, ""), " ")
	if !strings.Contains(args, "--only-faults 3") || !strings.Contains(args, "--seed 5") {
		t.Errorf("replay args %q do not name the seed and fault #3", args)
	}
}

// TestShrinkBudget: shrinking stops at its budget of runs.
func TestShrinkBudget(t *testing.T) {
	c := nemesis.Config{Seed: 5, Duration: 10 * time.Second}
	c.SetDefaults()
	runs := 0
	fake := func(context.Context, nemesis.Config) seedResult {
		runs++
		return seedResult{status: statusFail, rules: []string{"r"}}
	}
	var stderr strings.Builder
	s := &shrinker{x: &exploration{subject: chaosSubject{}, stderr: &stderr, bar: &progressBar{}}, run: fake, seed: 5, rule: "r", budget: 3, best: c}
	s.shrink(context.Background())
	if runs != 3 {
		t.Fatalf("%d runs; want the budget, 3", runs)
	}
}

// A chaos flag without the chaos scenario selected is refused.
func TestRunChaosFlagsNeedChaos(t *testing.T) {
	code, _, stderr := runCLI(t, "run", "--scenarios", "placement", "--orders", "5", "--out", filepath.Join(t.TempDir(), "u80.json"))
	if code != exitUsage || !strings.Contains(stderr, "--orders configures the chaos scenario") {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming --orders", code, stderr)
	}
	code, _, stderr = runCLI(t, "run", "--scenarios", "chaos", "--orders", "0", "--out", filepath.Join(t.TempDir(), "u80.json"))
	if code != exitUsage {
		t.Fatalf("--orders 0: exit %d, stderr %q; want 2", code, stderr)
	}
	code, _, stderr = runCLI(t, "run", "--scenarios", "normalChain", "--inboxes", "2", "--out", filepath.Join(t.TempDir(), "u80.json"))
	if code != exitUsage || !strings.Contains(stderr, "--inboxes configures the chaos scenario") {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming --inboxes", code, stderr)
	}
}

// TestExploreSummaryFits100Columns: with every fault kind in the runs, the
// summary (its table and the faults under it) stays within 100 columns and
// still names every kind with its count.
func TestExploreSummaryFits100Columns(t *testing.T) {
	var parts []string
	for i, k := range spec.NemesisKinds() {
		parts = append(parts, fmt.Sprintf("%s:%d", k, 100+i))
	}
	var out bytes.Buffer
	x := &exploration{stdout: &out, stderr: io.Discard}
	for s := int64(1); s <= 100; s++ {
		x.results = append(x.results, seedResult{seed: s, status: statusPass, events: 1000, elapsed: time.Second,
			metrics: map[string]string{"faults": strings.Join(parts, "+")}})
	}
	x.summary(time.Hour, 100, false)
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("a line of %d columns: %s", n, l)
		}
	}
	for i, k := range spec.NemesisKinds() {
		if want := fmt.Sprintf("%s %d", k, 100*(100+i)); !strings.Contains(strings.Join(strings.Fields(out.String()), " "), want) {
			t.Errorf("the summary does not say %q:\n%s", want, out.String())
		}
	}
}
