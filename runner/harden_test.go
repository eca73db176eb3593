package runner_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// snapshot reads every file under dir (relative path -> content), to show
// that a refused or lost run left them byte-identical.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s was deleted", p)
		} else if a != b {
			t.Errorf("%s was changed", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was created", p)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOutRefusedBeforeAnythingRuns: every --out that would destroy a file
// that is not ours, or cannot be written, is refused with ErrBadOutput
// before Run connects to anything (the DSN here is unreachable: reaching
// it would be ErrUnavailable), and every file is left byte-identical.
func TestOutRefusedBeforeAnythingRuns(t *testing.T) {
	cfg, err := infra.ResolveDSN("root@tcp(127.0.0.1:1)/")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		out   string
		want  string
	}{
		{"directory of the user's logs", func(dir string) {
			writeFile(t, filepath.Join(dir, "d/mylogs/a.jsonl"), `{"seq":1,"mine":true}`+"\n")
		}, "d/mylogs", "must end in .json"},
		{"unrelated existing file", func(dir string) { writeFile(t, filepath.Join(dir, "p.txt"), "my notes\n") }, "p.txt", "must end in .json"},
		{"user's JSON file", func(dir string) { writeFile(t, filepath.Join(dir, "x.json"), `{"mine":1}`) }, "x.json", "not an orderflow-audit evidence file"},
		{"existing log directory with other files", func(dir string) {
			writeFile(t, filepath.Join(dir, "ext/u81/keep/data.jsonl"), "user data\n")
		}, "ext/u81.json", "holds other files than our event logs"},
		{"log directory of .jsonl files that are not our logs", func(dir string) {
			writeFile(t, filepath.Join(dir, "e/u80/normalChain/relay-a.jsonl"), `{"seq":1,"scenario":"other","run_id":"x"}`+"\n")
		}, "e/u80.json", "holds other files than our event logs"},
		{"witness directory with a user's file", func(dir string) {
			writeFile(t, filepath.Join(dir, "w/u80/witness/notes.txt"), "mine\n")
		}, "w/u80.json", "is not a witness file of this tool"},
		{"witness/db with a file that is not a binlog", func(dir string) {
			writeFile(t, filepath.Join(dir, "w/u80/witness/db/binlog.000001"), "not a binlog\n")
		}, "w/u80.json", "is not a witness file of this tool"},
		{"witness/kafka with a file kfake does not write", func(dir string) {
			writeFile(t, filepath.Join(dir, "w/u80/witness/kafka/partitions/t-0/mine.txt"), "mine\n")
		}, "w/u80.json", "is not a witness file of this tool"},
		{"out is a directory", func(dir string) { writeFile(t, filepath.Join(dir, "dir.json/file"), "x") }, "dir.json", "is a directory"},
		{"log path is a file", func(dir string) { writeFile(t, filepath.Join(dir, "f"), "x") }, "f.json", "is not a directory"},
		{"parent is a file", func(dir string) { writeFile(t, filepath.Join(dir, "file"), "x") }, "file/u80.json", "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(dir)
			before := snapshot(t, dir)
			_, err := runner.Run(t.Context(), runner.Options{MySQL: cfg, Out: filepath.Join(dir, tc.out), Timeout: 10 * time.Second})
			if !errors.Is(err, evidence.ErrBadOutput) || errors.Is(err, infra.ErrUnavailable) {
				t.Fatalf("Run(--out %s) = %v; want ErrBadOutput before connecting", tc.out, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
			sameFiles(t, before, snapshot(t, dir))
		})
	}
	if _, err := os.Stat("/sys"); err == nil {
		_, err := runner.Run(t.Context(), runner.Options{MySQL: cfg, Out: "/sys/u80.json"})
		if !errors.Is(err, evidence.ErrBadOutput) || !strings.Contains(err.Error(), "/sys") {
			t.Errorf("Run(--out /sys/u80.json) = %v; want ErrBadOutput naming /sys", err)
		}
	}
}

// TestOutAcceptsWitnesses: a log directory holding a run's witnesses
// beside its logs (binlog files, a kfake data directory, an external
// broker's dump) is ours to replace.
func TestOutAcceptsWitnesses(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "u80")
	writeFile(t, filepath.Join(logs, "normalChain", "scenario.jsonl"), "")
	writeFile(t, filepath.Join(logs, "witness", "db", "binlog.000001"), "\xfebin\x00rest")
	writeFile(t, filepath.Join(logs, "witness", "db", "mysql-bin.000002"), "\xfebin\x00rest")
	for _, f := range []string{"meta.json", "topics.json", "groups.log", "pids.log", "partitions/ofa.r.x-0/0.dat",
		"partitions/ofa.r.x-0/0.idx", "partitions/ofa.r.x-0/snapshot.json"} {
		writeFile(t, filepath.Join(logs, "witness", "kafka", f), "{}")
	}
	writeFile(t, filepath.Join(logs, "witness", "kafka.jsonl"), `{"kind":"header","format":"x","version":1}`+"\n")
	if err := runner.CheckOut(filepath.Join(dir, "u80.json")); err != nil {
		t.Errorf("CheckOut: %v", err)
	}
}

// TestTimeoutBelowMinimum: a timeout the selection cannot pass with is
// refused up front, naming the minimum, and nothing is written.
func TestTimeoutBelowMinimum(t *testing.T) {
	cfg, err := infra.ResolveDSN("root@tcp(127.0.0.1:1)/")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "u80.json")
	for _, tc := range []struct {
		ids     []string
		timeout time.Duration
		want    string
	}{
		{nil, time.Millisecond, "at least 3s (relayKill9)"},
		{[]string{"relayKill9"}, 2 * time.Second, "at least 3s (relayKill9)"},
		{[]string{"placement"}, 500 * time.Millisecond, "at least 1s (placement)"},
	} {
		_, err := runner.Run(t.Context(), runner.Options{MySQL: cfg, Scenarios: tc.ids, Timeout: tc.timeout, Out: out})
		if !errors.Is(err, runner.ErrBadOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%v, timeout %v) = %v; want ErrBadOptions with %q", tc.ids, tc.timeout, err, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("something was written: %v", err)
	}
}

// privateOpts returns options for a run against a private mariadbd.
func privateOpts(t *testing.T, m *infratest.MariaDB, dir string, ids ...string) runner.Options {
	t.Helper()
	return runner.Options{
		MySQL: m.Config(), Scenarios: ids, Out: filepath.Join(dir, "u80.json"),
		Timeout: 10 * time.Second, Executable: exe,
	}
}

// noFail fails the test for any scenario recorded as FAIL: infrastructure
// that went away is never the system under test failing.
func noFail(t *testing.T, ev *evidence.Evidence) {
	t.Helper()
	for _, s := range ev.Scenarios {
		if s.Status == evidence.StatusFail {
			t.Errorf("%s: FAIL (%s); want PASS or NOT_RUN", s.ID, s.Reason)
		}
	}
}

// TestServerKilledMidRun: a database killed (SIGKILL) in the middle of a
// run makes the scenarios it cut short NOT_RUN, never FAIL; Run returns
// ErrInfraLost (and ErrUnavailable: exit 3); the passing evidence file of
// an earlier run and its logs stay byte-identical.
func TestServerKilledMidRun(t *testing.T) {
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	dir := t.TempDir()
	ids := []string{"placement", "idempotentReplay", "normalChain", "offsetReplay", "businessInvariants"}
	opts := privateOpts(t, m, dir, ids...)
	if ev, err := runner.Run(t.Context(), opts); err != nil || ev.Summary.Passed != len(ids) {
		t.Fatalf("first run: %v", err)
	}
	before := snapshot(t, dir)

	opts.OnScenario = func(evidence.Scenario) { m.Kill() }
	start := time.Now()
	ev, err := runner.Run(t.Context(), opts)
	if !errors.Is(err, runner.ErrInfraLost) || !errors.Is(err, infra.ErrUnavailable) {
		t.Fatalf("Run with its server killed = %v; want ErrInfraLost and ErrUnavailable", err)
	}
	t.Logf("Run ended %v after its start: %v", time.Since(start).Round(time.Millisecond), err)
	noFail(t, ev)
	if ev.Summary.NotRun == 0 || !ev.Run.Interrupted {
		t.Errorf("summary %+v interrupted %v; want scenarios not run, interrupted", ev.Summary, ev.Run.Interrupted)
	}
	for _, s := range ev.Scenarios {
		if s.Status == evidence.StatusNotRun && !strings.Contains(s.Reason, "infrastructure lost") {
			t.Errorf("%s: NOT_RUN reason %q does not say the infrastructure was lost", s.ID, s.Reason)
		}
	}
	if !strings.Contains(err.Error(), "kept") {
		t.Errorf("error does not say the earlier evidence was kept: %v", err)
	}
	sameFiles(t, before, snapshot(t, dir))
}

// TestServerStoppedMidRun: a database that stops answering (SIGSTOP) in the
// middle of a run does not hang it: Run ends well within the per-scenario
// timeout, with ErrInfraLost, the scenarios cut short NOT_RUN; the evidence
// (no earlier one existed) verifies as INCONCLUSIVE, never PASS or FAIL.
func TestServerStoppedMidRun(t *testing.T) {
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	opts := privateOpts(t, m, t.TempDir(), "placement", "normalChain", "sendBeforeMarkCrash", "offsetReplay")
	var paused time.Time
	opts.OnScenario = func(evidence.Scenario) {
		if paused.IsZero() {
			m.Pause()
			paused = time.Now()
		}
	}
	ev, err := runner.Run(t.Context(), opts)
	took := time.Since(paused)
	t.Logf("Run ended %v after the server was stopped: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, runner.ErrInfraLost) {
		t.Fatalf("Run with its server stopped = %v; want ErrInfraLost", err)
	}
	if took > opts.Timeout {
		t.Errorf("Run took %v after the server stopped; want less than the scenario timeout %v", took, opts.Timeout)
	}
	noFail(t, ev)
	m.Resume()
	v, err := checks.Verify(t.Context(), opts.Out, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != checks.Inconclusive {
		var b bytes.Buffer
		_ = checks.WriteText(&b, v)
		t.Errorf("verify of the evidence of a run that lost its server: %s; want INCONCLUSIVE\n%s", v.Status, b.String())
	}
}

// TestInterruptedMidScenarioIsNotRun: a scenario cut short by an interrupt
// is NOT_RUN (its partial logs are not part of the evidence), never FAIL,
// so that verify says INCONCLUSIVE; the log directory is world-readable
// like the evidence.
func TestInterruptedMidScenarioIsNotRun(t *testing.T) {
	opts := runOpts(t, "relayKill9", "normalChain")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	// relayKill9 waits for a 400 ms lease to run out: cancel inside it.
	time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("interrupted by the test")) })
	ev, err := runner.Run(ctx, opts)
	if !errors.Is(err, runner.ErrInterrupted) {
		t.Fatalf("Run = %v; want ErrInterrupted", err)
	}
	noFail(t, ev)
	for _, s := range ev.Scenarios {
		if s.Status == evidence.StatusNotRun && (!strings.Contains(s.Reason, "interrupted by the test") || len(s.Logs) > 0) {
			t.Errorf("%s: reason %q, %d logs; want the interruption named and no logs", s.ID, s.Reason, len(s.Logs))
		}
	}
	v, err := checks.Verify(t.Context(), opts.Out, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != checks.Inconclusive {
		var b bytes.Buffer
		_ = checks.WriteText(&b, v)
		t.Errorf("verify: %s; want INCONCLUSIVE\n%s", v.Status, b.String())
	}
	st, err := os.Stat(runner.LogDir(opts.Out))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o755 {
		t.Errorf("log directory mode %v; want 0755 (the evidence is 0644)", st.Mode().Perm())
	}
}

// TestActorKilledFromOutside: relay A's process is killed by SIGKILL
// before it claims anything (here it kills itself at once, as an outside
// kill would). That is recorded as a kill at the step it had reached
// (before-claim), never as the fault at after-publish-before-mark that did
// not happen; the scenario fails, saying why, and the verifier names the
// undeclared kill.
func TestActorKilledFromOutside(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "killed-actor.sh")
	writeFile(t, script, "#!/bin/sh\nkill -KILL $$\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := runOpts(t, "relayKill9")
	opts.Executable = script
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	s := ev.Scenarios[0]
	if s.Status != evidence.StatusFail || !strings.Contains(s.Reason, "before claiming") {
		t.Errorf("relayKill9: %s (%s); want FAIL saying it was killed before claiming", s.Status, s.Reason)
	}
	events, err := evidence.ReadEvents(filepath.Join(filepath.Dir(opts.Out), "u80", "relayKill9", "scenario.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var points []string
	for _, e := range events {
		if e.Kind == evidence.KindFault {
			points = append(points, e.Point+": "+e.Detail)
		}
	}
	if len(points) != 1 || !strings.HasPrefix(points[0], "before-claim: ") || !strings.Contains(points[0], "SIGKILL from outside") {
		t.Errorf("fault events %q; want one kill at before-claim", points)
	}
	if slices.ContainsFunc(points, func(p string) bool { return strings.HasPrefix(p, string(spec.AfterPublishBeforeMark)) }) {
		t.Errorf("a fault at %s is recorded, which never happened", spec.AfterPublishBeforeMark)
	}
	// The verifier agrees: the scenario failed as recorded, and nothing
	// in the evidence contradicts its events.
	v, err := checks.Verify(t.Context(), opts.Out, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	undeclared := false
	for _, r := range v.Reasons {
		switch {
		case r.Rule == "fault-undeclared" && strings.Contains(r.Message, "before-claim"):
			undeclared = true
		case r.Status == checks.Fail && r.Rule != "scenario-failed":
			t.Errorf("verify: %s %s: %s", r.Rule, r.Scenario, r.Message)
		}
	}
	if !undeclared {
		t.Errorf("verify does not name the kill at before-claim as a fault the scenario does not declare")
	}
}
