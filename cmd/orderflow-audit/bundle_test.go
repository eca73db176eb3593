package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// accountDSN creates an account on the test server with grants (<u>
// stands for it), dropped in t.Cleanup, and returns its DSN.
func accountDSN(t *testing.T, grants ...string) string {
	t.Helper()
	root := infratest.Server(t)
	user, pass := "ofa_pf_"+infratest.RandomID(), "pw-"+infratest.RandomID()
	account := "'" + user + "'@'127.0.0.1'"
	exec := func(q string) {
		t.Helper()
		if _, err := root.DB().ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE USER " + account + " IDENTIFIED BY '" + pass + "'")
	t.Cleanup(func() { exec("DROP USER IF EXISTS " + account) })
	for _, g := range grants {
		exec(strings.ReplaceAll(g, "<account>", account))
	}
	cfg, err := infra.ResolveDSN("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, pass
	return cfg.FormatDSN()
}

// TestRunRestrictedAccount: against an external server whose account may
// create the scratch databases but lacks PROCESS and TRIGGER, run exits 3
// before any scenario runs, naming both privileges and the grants, and
// writes nothing (it used to run every scenario and FAIL them, exit 1).
// The account given exactly infra.ScratchGrant and infra.ProcessGrant
// runs the scenarios that need them (effectDbError: a trigger, a look-up
// in INNODB_TRX, KILL CONNECTION) to PASS.
func TestRunRestrictedAccount(t *testing.T) {
	infratest.Server(t)
	dsn := accountDSN(t, "GRANT CREATE, DROP, SELECT, INSERT, UPDATE, DELETE ON `ofa\\_%`.* TO <account>")
	out := filepath.Join(t.TempDir(), "u80.json")
	code, stdout, stderr := runCLI(t, "run", "--mysql-dsn", dsn, "--scenarios", "normalChain,effectDbError", "--out", out)
	if code != exitUnavailable {
		t.Fatalf("exit %d; want %d; stdout:\n%s\nstderr:\n%s", code, exitUnavailable, stdout, stderr)
	}
	for _, w := range []string{"lacks 2 privilege(s)", "PROCESS ON *.*", "TRIGGER", "no scenario was run", "GRANT PROCESS ON *.*"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}
	if stdout != "" {
		t.Errorf("scenarios ran:\n%s", stdout)
	}
	if es, _ := os.ReadDir(filepath.Dir(out)); len(es) != 0 {
		t.Errorf("the refused run left %v", es)
	}

	dsn = accountDSN(t, infra.ScratchGrant, infra.ProcessGrant)
	code, stdout, stderr = runBinary(t, 2*time.Minute, os.Environ(), binary(t),
		"run", "--mysql-dsn", dsn, "--scenarios", "normalChain,effectDbError", "--out", out)
	if code != exitOK {
		t.Fatalf("with the grants: exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestRunSameOutRefused: a second run with the --out of a run in progress
// is refused at once (exit 2, naming the run that holds it) and changes
// nothing; the first run's bundle is whole and verifies. Two runs used to
// interleave and leave a bundle that FAILs.
func TestRunSameOutRefused(t *testing.T) {
	infratest.RequireMariaDB(t)
	bin := binary(t)
	out := filepath.Join(t.TempDir(), "u80.json")
	first := exec.Command(bin, "run", "--scenarios", "normalChain", "--out", out)
	var firstOut, firstErr bytes.Buffer
	started := &signalWriter{w: &firstErr, ch: make(chan struct{})}
	first.Stdout, first.Stderr = &firstOut, started
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	select { // its first progress line comes after it took the lock
	case <-started.ch:
	case <-time.After(time.Minute):
		first.Process.Kill()
		t.Fatal("the first run printed nothing within a minute")
	}
	code, stdout, stderr := runCLI(t, "run", "--scenarios", "normalChain", "--out", out)
	if err := first.Wait(); err != nil {
		t.Fatalf("the first run: %v\n%s", err, firstErr.String())
	}
	if code != exitUsage {
		t.Fatalf("second run: exit %d; want %d; stdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
	}
	for _, w := range []string{"--out " + out + " is in use", "pid", ".u80.lock"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("second run's stderr does not say %q:\n%s", w, stderr)
		}
	}
	if stdout != "" {
		t.Errorf("the second run ran scenarios:\n%s", stdout)
	}
	// One scenario leaves the other boundaries unproven: inconclusive (4)
	// at best, as for a run alone; never FAIL.
	if code, _, stderr := runCLI(t, "verify", out); code != exitInconclusive {
		t.Errorf("verify of the first run's bundle: exit %d; want %d\n%s", code, exitInconclusive, stderr)
	}
	if _, _, err := evidence.ReadFile(out); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(out), ".u80.lock")); !os.IsNotExist(err) {
		t.Errorf("the lock file is left after the runs (lstat: %v)", err)
	}
}

// signalWriter closes ch at its first write.
type signalWriter struct {
	mu   sync.Mutex
	w    *bytes.Buffer
	ch   chan struct{}
	once sync.Once
}

func (s *signalWriter) Write(p []byte) (int, error) {
	s.once.Do(func() { close(s.ch) })
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
