package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

func TestRunUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown scenario", []string{"run", "--scenarios", "normalChain,bogus"}, "bogus"},
		{"unknown plant", []string{"run", "--plant", "nope"}, "unknown planted bug"},
		{"bad timeout", []string{"run", "--timeout", "-1s"}, "timeout"},
		{"extra argument", []string{"run", "extra"}, "unexpected argument"},
		{"full with scenarios", []string{"run", "--full", "--scenarios", "normalChain"}, "--full selects"},
		{"full with a mode", []string{"run", "--full", "--consumer-mode", "record"}, "--full selects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, stderr)
			}
		})
	}
	_, _, stderr := runCLI(t, "run", "--scenarios", "bogus")
	if !strings.Contains(stderr, "offsetReplay") {
		t.Errorf("unknown scenario message does not list the valid ids:\n%s", stderr)
	}
}

// TestRunFull: --full runs the default suite, chaos and the call sweep,
// each scenario that runs a consumer in both modes, and the evidence
// verifies.
func TestRunFull(t *testing.T) {
	if testing.Short() {
		t.Skip("a full run (about 40 s)")
	}
	infratest.Server(t)
	infratest.RequireMariaDB(t)
	out := filepath.Join(t.TempDir(), "u80.json")
	// The built binary: relayKill9 and chaos start actor processes of it.
	cmd := exec.Command(binary(t), "run", "--full", "--duration", "2s", "--out", out)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("run --full: %v; stderr:\n%s", err, se.String())
	}
	stdout := so.String()
	for _, want := range []string{"U80 normalChain=PASS", "EXT chaos=PASS", "EXT chaos-batch=PASS", "EXT replayCrash-batch=PASS", "U79 placement=PASS",
		"EXT rebalanceSettling=PASS", "EXT rebalanceSettling-batch=PASS",
		"SWEEP callSweep=PASS", "SWEEP callSweep-batch=PASS"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--full printed no %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "placement-batch") {
		t.Errorf("a scenario without a consumer ran batched:\n%s", stdout)
	}
	if code, vout, verr := runCLI(t, "verify", out); code != exitOK {
		t.Errorf("verify: exit %d\n%s%s", code, vout, verr)
	}
}

func TestRunUnreachableDatabase(t *testing.T) {
	out := filepath.Join(t.TempDir(), "u80.json")
	code, _, stderr := runCLI(t, "run", "--mysql-dsn", "root:hunter2@tcp(127.0.0.1:1)/", "--out", out)
	if code != exitUnavailable {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUnavailable, stderr)
	}
	if strings.Contains(stderr, "hunter2") {
		t.Errorf("stderr leaks the password:\n%s", stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an evidence file was written (stat: %v)", err)
	}
}

func TestRunJSONAndLines(t *testing.T) {
	infratest.Server(t)
	infratest.RequireMariaDB(t) // run starts a private server
	dir := t.TempDir()
	out := filepath.Join(dir, "u80.json")
	code, stdout, stderr := runCLI(t, "run", "--scenarios", "txBoundaryRollback,placement", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	want := "U79 placement=PASS status=201 orders=1 stock=8 idemRows=1 outbox=1\n" +
		"U80 txBoundaryRollback=PASS stock=10 idemRows=0 outboxRollback=true seedUntouched=true\n"
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if !strings.Contains(stderr, "placement") || !strings.Contains(stderr, "PASS") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
	if _, _, err := evidence.ReadFile(out); err != nil {
		t.Fatalf("evidence: %v", err)
	}

	code, stdout, stderr = runCLI(t, "run", "--scenarios", "placement", "--json", "--out", out)
	if code != exitOK {
		t.Fatalf("--json exit %d; stderr:\n%s", code, stderr)
	}
	var sum struct {
		RunID     string `json:"run_id"`
		Scenarios []struct {
			ID, Status string
		} `json:"scenarios"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, stdout)
	}
	if sum.RunID == "" || len(sum.Scenarios) != 1 || sum.Scenarios[0].Status != "PASS" {
		t.Errorf("summary %+v", sum)
	}
}

func TestRunPlantedFailsWithExit1(t *testing.T) {
	infratest.Server(t)
	infratest.RequireMariaDB(t) // run starts a private server
	out := filepath.Join(t.TempDir(), "u80.json")
	code, stdout, stderr := runCLI(t, "run", "--scenarios", "normalChain", "--plant", "no-inbox-dedupe", "--out", out)
	if code != exitFail {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitFail, stdout, stderr)
	}
	if !strings.Contains(stdout, "normalChain=FAIL") || !strings.Contains(stderr, "NEGATIVE CONTROL") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	ev, _, err := evidence.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Run.Planted != "no-inbox-dedupe" || ev.Scenarios[0].Status != evidence.StatusFail || ev.Scenarios[0].Reason == "" {
		t.Errorf("evidence run %+v scenario %+v", ev.Run, ev.Scenarios[0])
	}
}

func TestRedactArgs(t *testing.T) {
	got := strings.Join(redactArgs([]string{"--mysql-dsn", "u:pw1@tcp(h:1)/", "--mysql-dsn=u:pw2@tcp(h:1)/"}), " ")
	if strings.Contains(got, "pw1") || strings.Contains(got, "pw2") {
		t.Errorf("redactArgs = %q", got)
	}
}

// TestRunSIGINT interrupts a real run process after its first observation
// line, with SIGINT (default run: a private server) and SIGTERM (against
// the shared server): it must exit 4 (not everything ran; nothing failed),
// clean up (the private server stopped and its directory removed; the
// scratch databases on an external server dropped) and leave an evidence
// file that says interrupted (never a passing one), whose scenarios that
// did not finish are NOT_RUN, never FAIL, so that verify says INCONCLUSIVE
// (exit 4).
func TestRunSIGINT(t *testing.T) {
	srv := infratest.Server(t)
	infratest.RequireMariaDB(t) // run starts a private server
	for _, tc := range []struct {
		name string
		sig  os.Signal
		args []string
	}{
		{"SIGINT, private server", os.Interrupt, nil},
		{"SIGTERM, external server", syscall.SIGTERM, []string{"--mysql-dsn", srv.DSNFor("")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			out := filepath.Join(t.TempDir(), "u80.json")
			cmd := exec.Command(binary(t), append([]string{"run", "--out", out}, tc.args...)...)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				cmd.Process.Kill()
				t.Fatalf("no observation line: %v; stderr:\n%s", err, stderr.String())
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, stdout)
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitInconclusive {
				t.Fatalf("after %v: %v, want exit %d; first line %q; stderr:\n%s", tc.sig, err, exitInconclusive, line, stderr.String())
			}
			if !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("stderr does not say interrupted:\n%s", stderr.String())
			}
			ev, _, err := evidence.ReadFile(out)
			if err != nil {
				t.Fatalf("evidence of the interrupted run: %v", err)
			}
			if !ev.Run.Interrupted || ev.Summary.Passed == ev.Summary.Total || ev.Summary.Failed != 0 {
				t.Errorf("evidence run %+v summary %+v: want interrupted, not all passed, none failed", ev.Run, ev.Summary)
			}
			if code, out, _ := runCLI(t, "verify", out); code != exitInconclusive {
				t.Errorf("verify of the interrupted run: exit %d; want %d (INCONCLUSIVE)\n%s", code, exitInconclusive, out)
			}
			privateGone(t, tmp)
			var left int
			if err := srv.DB().QueryRow(`SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?`,
				"ofa_"+ev.Run.ID+"%").Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left != 0 {
				t.Errorf("%d scratch databases of run %s left behind", left, ev.Run.ID)
			}
		})
	}
}
