package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// runProc is a `run` (or other command) process of the built binary.
type runProc struct {
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line
	stderr syncBuffer
	done   chan struct{}
	err    error // of Wait, once done is closed
}

// startProc starts the binary with args; its stdout is read line by line.
func startProc(t *testing.T, args ...string) *runProc {
	t.Helper()
	p := &runProc{cmd: exec.Command(binary(t), args...), lines: make(chan string, 100), done: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// line waits for the next stdout line.
func (p *runProc) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("no more output (%v); stderr:\n%s", p.wait(t, time.Second), p.stderr.String())
		}
		return l
	case <-time.After(60 * time.Second):
		t.Fatalf("no output line within 60 s; stderr:\n%s", p.stderr.String())
	}
	return ""
}

// wait waits up to d for the process and returns its exit code (-1: it
// did not end in time; -2: ended by a signal).
func (p *runProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		return -1
	}
	var exit *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	case errors.As(p.err, &exit):
		return -2
	}
	t.Fatalf("wait: %v", p.err)
	return 0
}

// rest drains the remaining stdout lines of an ended process.
func (p *runProc) rest() []string {
	var out []string
	for l := range p.lines {
		out = append(out, l)
	}
	return out
}

func noFailLines(t *testing.T, lines []string) {
	t.Helper()
	for _, l := range lines {
		if strings.Contains(l, "=FAIL") {
			t.Errorf("a scenario was reported as failed: %s", l)
		}
	}
}

// stderrClean checks the progress: no MySQL driver log lines.
func stderrClean(t *testing.T, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "[mysql]") {
		t.Errorf("the MySQL driver's own log lines reach stderr:\n%s", stderr)
	}
}

// TestRunStoppedServerCtrlC: a database stopped with SIGSTOP (answering
// nothing, connections open) does not hold the run: Ctrl-C ends it within
// 10 s, with exit 3 (the server was lost), the cut scenarios NOT_RUN.
func TestRunStoppedServerCtrlC(t *testing.T) {
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	out := filepath.Join(t.TempDir(), "u80.json")
	p := startProc(t, "run", "--mysql-dsn", m.DSN(), "--out", out)
	first := p.line(t)
	m.Pause()
	time.Sleep(500 * time.Millisecond)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	code := p.wait(t, 10*time.Second)
	t.Logf("exit %d %v after SIGINT", code, time.Since(sent).Round(time.Millisecond))
	if code == -1 {
		t.Fatalf("run still going 10 s after SIGINT with its server stopped; stderr:\n%s", p.stderr.String())
	}
	if code != exitUnavailable {
		t.Errorf("exit %d; want %d; stderr:\n%s", code, exitUnavailable, p.stderr.String())
	}
	noFailLines(t, append([]string{first}, p.rest()...))
	stderrClean(t, p.stderr.String())
	m.Resume()
	ev, _, err := evidence.ReadFile(out)
	if err != nil {
		t.Fatalf("evidence: %v", err)
	}
	if !ev.Run.Interrupted || ev.Summary.Failed != 0 || ev.Summary.NotRun == 0 {
		t.Errorf("evidence run %+v summary %+v; want interrupted, none failed, some not run", ev.Run, ev.Summary)
	}
}

// TestRunStoppedServerWithoutSignal: without Ctrl-C, a stopped database
// ends the run within the per-scenario timeout, exit 3, naming the cause.
func TestRunStoppedServerWithoutSignal(t *testing.T) {
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	out := filepath.Join(t.TempDir(), "u80.json")
	const timeout = 10 * time.Second
	p := startProc(t, "run", "--mysql-dsn", m.DSN(), "--out", out, "--timeout", timeout.String())
	p.line(t)
	m.Pause()
	paused := time.Now()
	code := p.wait(t, timeout)
	t.Logf("exit %d %v after SIGSTOP of the server", code, time.Since(paused).Round(time.Millisecond))
	if code != exitUnavailable {
		t.Fatalf("exit %d (-1: still running after the %v timeout); want %d; stderr:\n%s", code, timeout, exitUnavailable, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "stopped answering") {
		t.Errorf("stderr does not name the cause:\n%s", p.stderr.String())
	}
	noFailLines(t, p.rest())
}

// TestRunSecondSignalExitsAtOnce: a second Ctrl-C does not wait for the
// cleanup (here held up by a stopped server): exit 130 within a second.
func TestRunSecondSignalExitsAtOnce(t *testing.T) {
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	p := startProc(t, "run", "--mysql-dsn", m.DSN(), "--out", filepath.Join(t.TempDir(), "u80.json"))
	p.line(t)
	m.Pause()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, time.Second)
	if code != 128+int(syscall.SIGINT) {
		t.Fatalf("after a second SIGINT: exit %d (-1: still running after 1 s); want %d; stderr:\n%s",
			code, 128+int(syscall.SIGINT), p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "clean") {
		t.Errorf("stderr does not say how to remove what is left:\n%s", p.stderr.String())
	}
}

// TestRunServerKilled: a database killed mid-run: exit 3 naming it, no
// scenario reported as failed, and the passing evidence of an earlier run
// (with its logs) byte-identical.
func TestRunServerKilled(t *testing.T) {
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	dir := t.TempDir()
	out := filepath.Join(dir, "u80.json")
	sel := "placement,idempotentReplay,keyReuseOtherBody,concurrentDuplicates,normalChain,offsetReplay"
	if code, _, stderr := runCLI(t, "run", "--mysql-dsn", m.DSN(), "--scenarios", sel, "--out", out); code != exitOK {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	before := snapshotDir(t, dir)

	p := startProc(t, "run", "--mysql-dsn", m.DSN(), "--scenarios", sel, "--out", out)
	lines := []string{p.line(t), p.line(t)}
	m.Kill()
	code := p.wait(t, 30*time.Second)
	lines = append(lines, p.rest()...)
	if code != exitUnavailable {
		t.Fatalf("exit %d; want %d; stderr:\n%s", code, exitUnavailable, p.stderr.String())
	}
	noFailLines(t, lines)
	stderr := p.stderr.String()
	stderrClean(t, stderr)
	for _, want := range []string{"is unreachable", "kept"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	after := snapshotDir(t, dir)
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s changed or was removed", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s was left behind", name)
		}
	}
}

// TestRunExternalBrokerLost: an external broker that goes away mid-run is
// the infrastructure lost too: exit 3, no scenario failed.
func TestRunExternalBrokerLost(t *testing.T) {
	infratest.Server(t)
	infratest.RequireMariaDB(t) // run starts a private server
	k, err := infra.StartKafka(t.Context(), infra.KafkaConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	// Ten scenarios that do not use the broker come first: it is gone
	// before normalChain, the first that does, starts or finishes.
	sel := "placement,idempotentReplay,keyReuseOtherBody,concurrentDuplicates,insufficientStock," +
		"noOversell,tokenMissing,tokenBadSignature,tokenExpired,tokenWrongAlg,normalChain,offsetReplay"
	p := startProc(t, "run", "--kafka-brokers", strings.Join(k.Brokers, ","), "--scenarios", sel,
		"--out", filepath.Join(t.TempDir(), "u80.json"))
	lines := []string{p.line(t)}
	k.Close()
	code := p.wait(t, 30*time.Second)
	lines = append(lines, p.rest()...)
	if code != exitUnavailable {
		t.Fatalf("exit %d; want %d; stdout %q; stderr:\n%s", code, exitUnavailable, lines, p.stderr.String())
	}
	noFailLines(t, lines)
	if !strings.Contains(p.stderr.String(), "Kafka at") {
		t.Errorf("stderr does not name the broker:\n%s", p.stderr.String())
	}
}

// TestRunKilledThenClean: a run killed outright (SIGKILL) leaves its
// scratch database; the next run mentions it; `clean --dry-run` lists it
// and drops nothing; `clean` drops it, and never a database whose run is
// alive.
func TestRunKilledThenClean(t *testing.T) {
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	srv, err := infra.Connect(t.Context(), m.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	live, err := srv.HoldLock(t.Context(), infra.LockName("livetest"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	if _, err := srv.CreateScratch(t.Context(), "ofa_livetest_x", "livetest"); err != nil {
		t.Fatal(err)
	}

	p := startProc(t, "run", "--mysql-dsn", m.DSN(), "--scenarios", "relayKill9", "--out", filepath.Join(t.TempDir(), "u80.json"))
	// Kill it once its scratch database is marked as ours.
	var left, tool string
	for deadline := time.Now().Add(30 * time.Second); tool == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if left == "" {
			_ = srv.DB().QueryRow(`SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'ofa\_2%'`).Scan(&left)
		} else {
			_ = srv.DB().QueryRow("SELECT tool FROM `" + left + "`.ofa_marker").Scan(&tool)
		}
	}
	if tool == "" {
		t.Fatalf("the run made no scratch database (%q); stderr:\n%s", left, p.stderr.String())
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 5*time.Second)
	if !dbExists(t, srv, left) {
		t.Skipf("the run was killed after it dropped %s; nothing left to clean", left)
	}

	_, _, stderr := runCLI(t, "run", "--mysql-dsn", m.DSN(), "--scenarios", "tokenMissing", "--out", filepath.Join(t.TempDir(), "u80.json"))
	if !strings.Contains(stderr, "note: 1 scratch database(s)") || !strings.Contains(stderr, left) || !strings.Contains(stderr, "clean") {
		t.Errorf("the next run does not mention the leftover %s:\n%s", left, stderr)
	}
	code, stdout, stderr := runCLI(t, "clean", "--dry-run", "--mysql-dsn", m.DSN())
	if code != exitOK || !strings.Contains(stdout, "would drop  "+left) || !strings.Contains(stdout, "in use      ofa_livetest_x") {
		t.Errorf("clean --dry-run: exit %d\n%s%s", code, stdout, stderr)
	}
	if !dbExists(t, srv, left) {
		t.Errorf("clean --dry-run dropped %s", left)
	}
	code, stdout, stderr = runCLI(t, "clean", "--mysql-dsn", m.DSN())
	if code != exitOK || !strings.Contains(stdout, "dropped     "+left) {
		t.Errorf("clean: exit %d\n%s%s", code, stdout, stderr)
	}
	if dbExists(t, srv, left) {
		t.Errorf("clean left %s", left)
	}
	if !dbExists(t, srv, "ofa_livetest_x") {
		t.Errorf("clean dropped the database of a live run")
	}
}

func dbExists(t *testing.T, srv *infra.Server, name string) bool {
	t.Helper()
	var n int
	if err := srv.DB().QueryRow(`SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// snapshotDir reads every file under dir, for byte-identical checks.
func snapshotDir(t *testing.T, dir string) map[string]string {
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

// TestRunStdoutClosed: `run | head -1` stops the run like an interrupt
// (exit 4: not everything ran) instead of dying of SIGPIPE: the evidence
// says interrupted, the staging directory is gone, the cause is named.
func TestRunStdoutClosed(t *testing.T) {
	infratest.Server(t)
	infratest.RequireMariaDB(t) // run starts a private server
	dir := t.TempDir()
	out := filepath.Join(dir, "u80.json")
	cmd := exec.Command(binary(t), "run", "--out", out)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	r.Close() // head -1 exits
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInconclusive {
		t.Fatalf("run with its stdout closed: %v (%v); want exit %d; stderr:\n%s", err, cmd.ProcessState, exitInconclusive, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stdout was closed") {
		t.Errorf("stderr does not say why it stopped:\n%s", stderr.String())
	}
	ev, _, err := evidence.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Run.Interrupted || ev.Summary.Failed != 0 {
		t.Errorf("run %+v summary %+v; want interrupted, none failed", ev.Run, ev.Summary)
	}
	stages, _ := filepath.Glob(filepath.Join(dir, ".u80-*"))
	if len(stages) > 0 {
		t.Errorf("staging directories left: %v", stages)
	}
}

// TestInterruptsSecondSignal: the first signal cancels with the signal as
// the cause; the second exits with 128+signal at once.
func TestInterruptsSecondSignal(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	ctx, cancel := context.WithCancelCause(context.Background())
	var stderr syncBuffer
	exited := make(chan int, 1)
	go interrupts(sigs, cancel, &stderr, func(code int) { exited <- code })
	sigs <- syscall.SIGTERM
	<-ctx.Done()
	if got := context.Cause(ctx).Error(); got != "interrupted by SIGTERM" {
		t.Errorf("cause %q", got)
	}
	select {
	case code := <-exited:
		t.Fatalf("exited (%d) on the first signal", code)
	case <-time.After(50 * time.Millisecond):
	}
	sigs <- os.Interrupt
	if code := <-exited; code != 130 {
		t.Errorf("second signal: exit %d; want 130", code)
	}
}

// TestRunUnwritableOut: outputs that cannot be written exit 2 with the
// path, before anything runs (the DSN is unreachable: reaching it would be
// exit 3): a read-only file system, a directory of another user, a report
// into a missing directory.
func TestRunUnwritableOut(t *testing.T) {
	const dsn = "root@tcp(127.0.0.1:1)/"
	if _, err := os.Stat("/sys"); err == nil {
		code, _, stderr := runCLI(t, "run", "--mysql-dsn", dsn, "--out", "/sys/u80.json")
		if code != exitUsage || !strings.Contains(stderr, "/sys") {
			t.Errorf("--out /sys/u80.json: exit %d; want %d naming /sys:\n%s", code, exitUsage, stderr)
		}
	}
	code, _, stderr := runCLI(t, "report", "-o", "/nonexistent/x.md", filepath.Join("..", "..", "checks", "testdata", "u80", "u80.json"))
	if code != exitUsage || !strings.Contains(stderr, "/nonexistent/x.md") {
		t.Errorf("report -o /nonexistent/x.md: exit %d; want %d naming it:\n%s", code, exitUsage, stderr)
	}

	// A directory this process cannot write: another user's. As root,
	// run the command as nobody in a directory root owns.
	dir := t.TempDir()
	other := filepath.Join(dir, "others")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), "run", "--mysql-dsn", dsn, "--out", filepath.Join(other, "u80.json"))
	if os.Geteuid() == 0 {
		for _, d := range []string{filepath.Dir(dir), dir, filepath.Dir(binary(t))} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else if err := os.Chmod(other, 0o555); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage || !strings.Contains(errb.String(), other) {
		t.Errorf("--out in another user's directory: %v; want exit %d naming %s:\n%s", err, exitUsage, other, errb.String())
	}
}

// TestReportOutRefused: report -o never overwrites its own input or any
// evidence file, and says so (exit 2) before verifying anything.
func TestReportOutRefused(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "u80.json")
	other := filepath.Join(dir, "other.json")
	src, err := os.ReadFile(filepath.Join("..", "..", "checks", "testdata", "u80", "u80.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{in, other} {
		if err := os.WriteFile(p, src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []string{in, dir + "/./u80.json", other} {
		code, _, stderr := runCLI(t, "report", "-o", o, in)
		if code != exitUsage || !strings.Contains(stderr, "refusing") {
			t.Errorf("report -o %s %s: exit %d; want %d refusing:\n%s", o, in, code, exitUsage, stderr)
		}
	}
	for _, p := range []string{in, other} {
		if b, _ := os.ReadFile(p); !bytes.Equal(b, src) {
			t.Errorf("%s was changed", p)
		}
	}
}

// TestRunFlagsRefused: empty list values, --seed 0 and a timeout below the
// selection's minimum are refused up front (exit 2); --json prints one
// object on bad input and on an unreachable server too.
func TestRunFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{args: []string{"--scenarios", ","}, want: "empty item"},
		{args: []string{"--scenarios", "placement,,normalChain"}, want: "empty item"},
		{args: []string{"--scenarios="}, want: "empty item"},
		{args: []string{"--kafka-brokers", ","}, want: "empty item"},
		{env: ",", want: infra.EnvKafkaBrokers},
		{args: []string{"--seed", "0"}, want: "--seed 0"},
		{args: []string{"--timeout", "1ms"}, want: "at least 3s (relayKill9)"},
		{args: []string{"--scenarios", "placement", "--timeout", "100ms"}, want: "at least 1s (placement)"},
	} {
		t.Run(strings.Join(tc.args, " ")+tc.env, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv(infra.EnvKafkaBrokers, tc.env)
			}
			args := append([]string{"run", "--mysql-dsn", "root@tcp(127.0.0.1:1)/", "--out", filepath.Join(t.TempDir(), "u80.json")}, tc.args...)
			code, _, stderr := runCLI(t, args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d; want %d with %q:\n%s", code, exitUsage, tc.want, stderr)
			}
		})
	}
	for _, tc := range []struct {
		args   []string
		code   int
		status string
	}{
		{[]string{"--scenarios", "bogus"}, exitUsage, "BAD_INPUT"},
		{nil, exitUnavailable, "UNAVAILABLE"},
	} {
		args := append([]string{"run", "--json", "--mysql-dsn", "root:pw@tcp(127.0.0.1:1)/", "--out", filepath.Join(t.TempDir(), "u80.json")}, tc.args...)
		code, stdout, _ := runCLI(t, args...)
		if code != tc.code || !strings.Contains(stdout, `"status": "`+tc.status+`"`) || !strings.Contains(stdout, `"error"`) {
			t.Errorf("run --json %v: exit %d, stdout %q; want %d and status %s", tc.args, code, stdout, tc.code, tc.status)
		}
		if strings.Contains(stdout, ":pw@") {
			t.Errorf("run --json leaks the password: %s", stdout)
		}
	}
}

// TestOneVoice: every command's -h fits one screen (60 lines of at most
// 100 columns), has the same headings, spells a DSN, a number and a
// duration alike and points to docs/cli.md; a mistyped command, flag,
// scenario or planted bug gets a "did you mean" and the -h hint.
func TestOneVoice(t *testing.T) {
	for _, name := range visibleNames() {
		code, out, _ := runCLI(t, name, "-h")
		if code != exitOK {
			t.Errorf("%s -h: exit %d", name, code)
		}
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) > 60 {
			t.Errorf("%s -h is %d lines; one screen is 60", name, len(lines))
		}
		for _, l := range lines {
			if len([]rune(l)) > 100 {
				t.Errorf("%s -h has a line of %d columns: %s", name, len([]rune(l)), l)
			}
		}
		if !strings.HasPrefix(out, "Usage:\n") || !strings.Contains(out, "Examples:\n") {
			t.Errorf("%s -h lacks Usage: or Examples:\n%s", name, out)
		}
		if name != "help" && !strings.Contains(out, "docs/cli.md#"+name) {
			t.Errorf("%s -h does not point to docs/cli.md#%s", name, name)
		}
		for _, bad := range []string{" string ", " int ", " duration ", "Example:\n"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s -h spells a placeholder or heading %q the other way:\n%s", name, bad, out)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verfy"}, "did you mean verify?"},
		{[]string{"help", "reprot"}, "did you mean report?"},
		{[]string{"run", "--scenario", "x"}, "did you mean --scenarios?"},
		{[]string{"run", "--scenarios", "normalchain"}, "did you mean normalChain?"},
		{[]string{"run", "--plant", "mark-before-publsh"}, "did you mean mark-before-publish?"},
		{[]string{"explore", "--seed", "1"}, "did you mean --seeds?"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "-h' for") && !strings.Contains(stderr, "help' for") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with %q and the hint", tc.args, code, stderr, tc.want)
		}
	}
}

// TestUsageErrorsEndWithHint: every usage error of every command ends
// with the line that says where its usage is; the main usage says what a
// first and a second signal give.
func TestUsageErrorsEndWithHint(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--seed", "0"}, {"run", "--timeout", "-1s"}, {"run", "extra"}, {"run", "--plant", "x"},
		{"verify"}, {"verify", "a.json", "b.json"}, {"report"}, {"report", "--nope"},
		{"audit"}, {"explore", "--seeds", "0"}, {"clean", "extra"}, {"bench", "--events", "-1"},
		{"broker", "extra"}, {"scenarios", "extra"}, {"version", "extra"}, {"help", "a", "b"}, {"nosuch"},
	} {
		code, _, stderr := runCLI(t, args...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		last := lines[len(lines)-1]
		if code != exitUsage || !strings.HasPrefix(last, "Run 'orderflow-audit ") {
			t.Errorf("%v: exit %d, last line %q; want exit 2 and the hint last", args, code, last)
		}
	}
	_, out, _ := runCLI(t, "help")
	for _, want := range []string{"a first Ctrl-C or SIGTERM", "cleans up and exits 4", "130 (SIGINT)", "143 (SIGTERM)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the main usage does not say %q:\n%s", want, out)
		}
	}
}

// TestHelpPolish: one-letter flags are shown as -o, numeric defaults are
// not quoted, --plant lists the bugs, a bad flag gets a line and a hint
// (not the whole usage), and the scenario list fits 80 columns.
func TestHelpPolish(t *testing.T) {
	_, out, _ := runCLI(t, "report", "-h")
	if strings.Contains(out, "--o ") || !strings.Contains(out, "  -o ") {
		t.Errorf("report -h shows -o wrongly:\n%s", out)
	}
	_, out, _ = runCLI(t, "run", "-h")
	for _, want := range []string{"(default 1)", "(default 1m0s)", "(default evidence/u80.json)", "--plant BUG", "--mysql-dsn DSN", "docs/cli.md#run"} {
		if !strings.Contains(out, want) {
			t.Errorf("run -h lacks %s:\n%s", want, out)
		}
	}
	code, _, stderr := runCLI(t, "run", "--no-such-flag")
	if code != exitUsage || len(stderr) > 200 || !strings.Contains(stderr, "-h") {
		t.Errorf("unknown flag: exit %d, %d bytes on stderr; want a line and a hint:\n%s", code, len(stderr), stderr)
	}
	_, out, _ = runCLI(t, "scenarios")
	for _, l := range strings.Split(out, "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("scenarios prints a line of %d columns: %s", len([]rune(l)), l)
		}
	}
	if !strings.Contains(out, "relayKill9") {
		t.Errorf("scenarios does not list relayKill9:\n%s", out)
	}
}
