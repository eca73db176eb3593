package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// referenceProfile is the reference profile's text, with its migration
// globs made absolute so that a copy of it works from any directory, and
// edit applied to it (old, new, ... pairs, each old present).
func referenceProfile(t *testing.T, edit ...string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "profiles"))
	if err != nil {
		t.Fatal(err)
	}
	edit = append(edit, "[../migrations/*.up.sql, reference-stock.sql]",
		"["+filepath.Join(dir, "..", "migrations", "*.up.sql")+", "+filepath.Join(dir, "reference-stock.sql")+"]")
	return profileCopy(t, filepath.Join(dir, "reference.yaml"), edit...)
}

// profileCopy writes the profile at path, with edit applied (old, new,
// ... pairs, each old present, its first occurrence replaced), to a
// temporary directory and returns the copy's path.
func profileCopy(t *testing.T, path string, edit ...string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(edit); i += 2 {
		if !strings.Contains(s, edit[i]) {
			t.Fatalf("%s lacks %q", path, edit[i])
		}
		s = strings.Replace(s, edit[i], edit[i+1], 1)
	}
	out := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(out, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// auditRun is one audit run as a process of the built binary.
type auditRun struct {
	code           int
	stdout, stderr string
	out            string // the evidence file
}

// lockedBuffer is a bytes.Buffer that a process writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runAudit runs audit with args, its private server in a TMPDIR of its
// own, and checks that nothing of it is left once it ended: no mariadbd,
// no directory in TMPDIR, no staging directory beside the bundle, no
// process of the pipeline (their command lines name the run's database).
func runAudit(t *testing.T, profile string, args ...string) auditRun {
	t.Helper()
	return runAuditInterrupted(t, profile, "", args...)
}

// runAuditInterrupted is runAudit that sends SIGINT a second after
// interruptAt shows on stderr (empty: never).
func runAuditInterrupted(t *testing.T, profile, interruptAt string, args ...string) auditRun {
	t.Helper()
	infratest.RequireMariaDB(t)
	tmp, outs := t.TempDir(), t.TempDir()
	bin := binary(t)
	r := auditRun{out: filepath.Join(outs, "audit.json")}
	cmd := exec.Command(bin, append([]string{"audit", "--profile", profile, "--out", r.out}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var so bytes.Buffer
	se := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &so, se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if interruptAt != "" {
		for deadline := time.Now().Add(60 * time.Second); !strings.Contains(se.String(), interruptAt); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("no %q on stderr within 60 s: interrupting anyway", interruptAt)
				break
			}
		}
		time.Sleep(time.Second)
		_ = cmd.Process.Signal(syscall.SIGINT)
	}
	err := cmd.Wait()
	r.stdout, r.stderr = so.String(), se.String()
	r.code = cmd.ProcessState.ExitCode()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	privateGone(t, tmp)
	es, _ := os.ReadDir(outs)
	for _, e := range es {
		if e.Name() != "audit.json" && e.Name() != "audit" {
			t.Errorf("left beside the bundle: %s", e.Name())
		}
	}
	if raw, err := os.ReadFile(r.out); err == nil {
		if bb, err := evidence.ParseBlackBox(raw); err == nil {
			noProcessNaming(t, evidence.ScratchName(bb.Run.ID))
		}
	}
	return r
}

// noProcessNaming fails when a process's command line holds s.
func noProcessNaming(t *testing.T, s string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
			t.Errorf("process %s still runs: %s", filepath.Base(filepath.Dir(p)), bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
}

// TestAuditReference audits the reference pipeline, started from
// profiles/reference.yaml as actor processes, for a few seconds under a
// seeded nemesis: the verdict is PASS, the observation line has figures,
// and the bundle it wrote verifies PASS on its own.
func TestAuditReference(t *testing.T) {
	r := runAudit(t, referenceProfile(t), "--seed", "3", "--duration", "3s", "--faults", "kill,pause,net-cut")
	if r.code != exitOK {
		t.Fatalf("exit %d; want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	line := strings.SplitN(r.stdout, "\n", 2)[0]
	for _, want := range []string{"events committed ", "records ", "lost 0, pending 0", "faults ", "PASS"} {
		if !strings.Contains(line, want) {
			t.Errorf("observation line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "events committed 0,") {
		t.Errorf("observation line %q: nothing was committed", line)
	}
	code, out, errs := runCLI(t, "verify", r.out)
	if code != exitOK || !strings.Contains(out, "PASS") {
		t.Errorf("verify %s: exit %d; want 0 PASS\n%s%s", r.out, code, out, errs)
	}
	// The faults are recorded in the bundle, and the record is vouched for.
	bb := readBlackBox(t, r.out)
	if bb.Nemesis == nil || len(bb.Nemesis.Faults) == 0 {
		t.Fatalf("the bundle records no fault applied: %+v", bb.Nemesis)
	}
	f, err := os.OpenFile(filepath.Join(filepath.Dir(r.out), filepath.FromSlash(bb.Nemesis.File.Path)), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{}\n")
	f.Close()
	if code, out, _ := runCLI(t, "verify", r.out); code != exitFail || !strings.Contains(out, "nemesis-size") {
		t.Errorf("verify of a changed nemesis log: exit %d; want 1 naming nemesis-size\n%s", code, out)
	}
}

// TestAuditPlanted: a bug planted in the reference relay (records without
// a key) or consumer (offsets committed one short) FAILs the audit with
// the black-box rule that shows it, from the witnesses alone.
func TestAuditPlanted(t *testing.T) {
	for _, tc := range []struct {
		plant, role, start, rule string
	}{
		{"publish-without-key", "relay", "--topic {{topic}} --lease 2s", "record-mismatch"},
		{"offset-not-plus-one", "consumer", "--name notifier", "lag"},
	} {
		t.Run(tc.plant, func(t *testing.T) {
			// A short liveness bound: a consumer that never commits the
			// end offset keeps the audit settling until it expires.
			p := referenceProfile(t, tc.start+`"`, tc.start+` --plant `+tc.plant+`"`, "liveness: 30s", "liveness: 4s")
			r := runAudit(t, p, "--duration", "2s", "--faults", "none")
			if r.code != exitFail {
				t.Fatalf("exit %d; want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "FAIL "+tc.rule+":") {
				t.Errorf("stdout lacks a FAIL of rule %s:\n%s", tc.rule, r.stdout)
			}
		})
	}
}

// TestAuditRoleWillNotStart: a role whose command fails at once ends the
// audit with exit 3, naming the role and what it said, and leaves nothing
// running.
func TestAuditRoleWillNotStart(t *testing.T) {
	p := referenceProfile(t, "--group notify-{{run}} --name notifier", "--group notify-{{run}} --bogus-flag")
	start := time.Now()
	r := runAudit(t, p, "--duration", "2s", "--faults", "none")
	if r.code != exitUnavailable {
		t.Fatalf("exit %d; want 3\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"a role would not start: consumer-", "bogus-flag"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(r.out); err == nil {
		t.Errorf("an audit whose roles did not start wrote %s", r.out)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v to give up", d)
	}
}

// TestAuditBadProfile: a profile that does not validate exits 2 with
// every problem at its line, before anything starts.
func TestAuditBadProfile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\ntopic: {name: t, event_id: {header: id}}\noutbox:\n  table: outbox\n  tabel: y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "audit", "--profile", bad, "--out", filepath.Join(t.TempDir(), "a.json"))
	if code != exitUsage {
		t.Fatalf("exit %d; want 2 (stderr %q)", code, errs)
	}
	for _, want := range []string{"bad.yaml:5: outbox.tabel: unknown field", "bad.yaml:3: outbox.event_id: missing"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	// Flags and profiles the audit cannot run: refused before anything starts.
	good := referenceProfile(t)
	own := referenceProfile(t, "database:", "database:\n  dsn: \"u:hunter2@tcp(db:3306)/shop\"")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", good, "--faults", "gremlin"}, `unknown fault kind "gremlin"`},
		{[]string{"--profile", good, "--faults", "conn-kill,conn-kill"}, `fault kind "conn-kill" given twice`},
		{[]string{"--profile", good, "--duration", "1ms"}, "--duration"},
		{[]string{"--profile", good, "--out", "x.txt"}, "ending in .json"},
		{[]string{"--profile", own}, "migrations only to a database it creates"},
		{[]string{}, "--profile is required"},
	} {
		code, _, errs := runCLI(t, append([]string{"audit", "--out", filepath.Join(t.TempDir(), "a.json")}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errs, tc.want) || strings.Contains(errs, "hunter2") {
			t.Errorf("audit %q: exit %d, stderr %q; want 2 with %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestAuditInterrupted: Ctrl-C during the load stops the processes,
// captures the witnesses and writes the bundle marked interrupted, exits
// 4 (the lag it left is no finding), and leaves nothing running.
func TestAuditInterrupted(t *testing.T) {
	r := runAuditInterrupted(t, referenceProfile(t), "load for", "--duration", "20s", "--faults", "none")
	if r.code != exitInconclusive {
		t.Fatalf("exit %d; want 4\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(r.out); err != nil {
		t.Fatalf("no bundle after the interrupt: %v\n%s", err, r.stderr)
	}
	bb := readBlackBox(t, r.out)
	if !bb.Run.Interrupted {
		t.Errorf("the bundle is not marked interrupted")
	}
	if d := bb.Run.End.Sub(bb.Run.Start); d > 15*time.Second {
		t.Errorf("the run lasted %v after an interrupt in a 20 s load", d)
	}
	// The verifier, not the command, says why it is no PASS: the run was
	// interrupted, and the lag it left is no finding.
	code, out, _ := runCLI(t, "verify", r.out)
	if code != exitInconclusive || !strings.Contains(out, "run-interrupted") || strings.Contains(out, "FAIL") {
		t.Errorf("verify of an interrupted audit: exit %d; want 4 with run-interrupted and no FAIL\n%s", code, out)
	}
}

// TestAuditKilled: an audit killed outright (SIGKILL, no cleanup at all)
// takes the pipeline's processes and its private server with it (the
// kernel's parent-death signal), and the next audit writing beside it
// removes the staging directory and the server's directory it left.
func TestAuditKilled(t *testing.T) {
	infratest.RequireMariaDB(t)
	tmp, outs := t.TempDir(), t.TempDir()
	profile := referenceProfile(t)
	cmd := exec.Command(binary(t), "audit", "--profile", profile, "--out", filepath.Join(outs, "audit.json"), "--duration", "30s", "--faults", "none")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	se := &lockedBuffer{}
	cmd.Stderr = se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(se.String(), "load for"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the load did not start within 60 s:\n%s", se.String())
		}
	}
	var runID string
	for _, l := range strings.Split(se.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, "audit "); ok {
			runID, _, _ = strings.Cut(rest, " ")
		}
	}
	if runID == "" {
		t.Fatalf("no run id on stderr:\n%s", se.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(infratest.ServersIn(tmp)) == 0 && !processNaming(evidence.ScratchName(runID)) {
			break
		}
	}
	noProcessNaming(t, evidence.ScratchName(runID))
	waitNoServer(t, tmp)
	if es, _ := filepath.Glob(filepath.Join(outs, ".audit-stage-*")); len(es) != 1 {
		t.Errorf("staging directories after the kill: %v; want the one it was writing", es)
	}
	// The next audit beside it sweeps what the killed one left.
	cmd = exec.Command(binary(t), "audit", "--profile", profile, "--out", filepath.Join(outs, "audit.json"), "--duration", "1s", "--faults", "none")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the next audit: %v\n%s", err, out)
	}
	privateGone(t, tmp)
	if es, _ := filepath.Glob(filepath.Join(outs, ".audit-stage-*")); len(es) != 0 {
		t.Errorf("staging directories left after the next audit: %v", es)
	}
}

func processNaming(s string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// readBlackBox reads and parses the black-box evidence at path.
func readBlackBox(t *testing.T, path string) *evidence.BlackBox {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the bundle's evidence: %v", err)
	}
	bb, err := evidence.ParseBlackBox(raw)
	if err != nil {
		t.Fatal(err)
	}
	return bb
}

// TestAuditConnKill: conn-kill kills every connection of one replica on
// the private server, found by the replica's own account there; the
// reference pipeline's actors reconnect and the audit PASSes, and the
// nemesis record says how many connections each kill took.
func TestAuditConnKill(t *testing.T) {
	r := runAudit(t, referenceProfile(t), "--seed", "1", "--duration", "3s", "--faults", "conn-kill")
	if r.code != exitOK {
		t.Fatalf("exit %d; want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(r.out), "audit", "nemesis.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev struct{ Kind, Target, Result string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if ev.Kind != "conn-kill" {
			t.Errorf("fault %+v: want conn-kill only", ev)
		}
		var n int
		var user string
		if _, err := fmt.Sscanf(ev.Result, "done: %d connection(s) of %s killed", &n, &user); err == nil && n > 0 {
			if want := "ofa_" + strings.ReplaceAll(ev.Target, "-", "_"); user != want {
				t.Errorf("fault on %s killed the connections of %s; want %s", ev.Target, user, want)
			}
			killed += n
		}
	}
	if killed == 0 {
		t.Errorf("no connection killed:\n%s", b)
	}
	if line := strings.SplitN(r.stdout, "\n", 2)[0]; !strings.Contains(line, "faults conn-kill=") || !strings.Contains(line, "PASS") {
		t.Errorf("observation line %q: want PASS with conn-kill faults", line)
	}
}

// TestAuditAimedKill: kills are aimed at the moment right after a
// progress write commits, which the audit sees by following the private
// server's binlog live; the nemesis record says where each one aimed. A
// relay that marks its row SENT before it publishes (planted) then loses
// the event to such a kill: measured, 6 of 10 seeds FAIL
// lost-acked-not-published with the aim and 0 of 10 without it
// (docs/blackbox.md); this test stops at the first seed that fails.
func TestAuditAimedKill(t *testing.T) {
	p := referenceProfile(t, `--topic {{topic}} --lease 2s"`, `--topic {{topic}} --lease 2s --plant mark-before-publish"`)
	for _, seed := range []string{"2", "4", "5", "8", "9", "10"} {
		r := runAudit(t, p, "--seed", seed, "--duration", "4s", "--faults", "kill")
		b, err := os.ReadFile(filepath.Join(filepath.Dir(r.out), "audit", "nemesis.jsonl"))
		if err != nil {
			t.Fatalf("seed %s: exit %d, no nemesis record: %v\n%s", seed, r.code, err, r.stderr)
		}
		aimed := strings.Count(string(b), "(aimed: right after a progress write committed, at binlog.")
		if aimed == 0 {
			t.Fatalf("seed %s: no kill aimed:\n%s", seed, b)
		}
		if r.code == exitFail && strings.Contains(r.stdout, "lost-acked-not-published") {
			t.Logf("seed %s: FAIL lost-acked-not-published, %d kill(s) aimed", seed, aimed)
			return
		}
		if r.code != exitOK {
			t.Fatalf("seed %s: exit %d; want 0 or 1 with lost-acked-not-published\n%s%s", seed, r.code, r.stdout, r.stderr)
		}
	}
	t.Error("no seed of six found the planted mark-before-publish")
}

// TestAuditCommitLost: commit-lost drops the COMMITs a role sends on its
// database link for a while, closing the connection instead, so the
// transaction rolls back and the role cannot know. The reference pipeline
// replays what it could not commit and PASSes; its consumer planted with
// effect-error-swallowed (the offset of a failed effect transaction
// committed anyway) loses those effects, and the audit FAILs `effects`
// from the witnesses alone. Whether a fault meets a consumer's COMMIT is
// timing (a slow machine may not have consumers with partitions yet when
// a window opens; CI once met none on seed 1), so the plant is searched
// for as explore would, over seeds 1 to 3, and the FAILing run's nemesis
// record must show a consumer's COMMITs lost. Measured on a quiet host:
// seeds 1, 2 and 3 each FAIL.
func TestAuditCommitLost(t *testing.T) {
	for _, tc := range []struct {
		name, plant string
		want        int
		seeds       int
	}{
		{"correct", "", exitOK, 1},
		{"effect-error-swallowed", "effect-error-swallowed", exitFail, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var edit []string
			if tc.plant != "" {
				edit = []string{`--name notifier"`, `--name notifier --plant ` + tc.plant + `"`}
			}
			p := referenceProfile(t, edit...)
			var r auditRun
			for seed := 1; seed <= tc.seeds; seed++ {
				r = runAudit(t, p, "--seed", strconv.Itoa(seed), "--duration", "4s", "--faults", "commit-lost")
				if r.code == tc.want {
					break
				}
				t.Logf("seed %d: exit %d; want %d\n%s", seed, r.code, tc.want, r.stdout)
			}
			if r.code != tc.want {
				t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.want, r.stdout, r.stderr)
			}
			line := strings.SplitN(r.stdout, "\n", 2)[0]
			if !strings.Contains(line, "faults commit-lost=") {
				t.Errorf("observation line %q: want commit-lost faults", line)
			}
			if tc.want == exitFail && !strings.Contains(r.stdout, "FAIL effects:") {
				t.Errorf("stdout lacks a FAIL of rule effects:\n%s", r.stdout)
			}
			b, err := os.ReadFile(filepath.Join(filepath.Dir(r.out), "audit", "nemesis.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			lost := 0 // COMMITs lost on a consumer's link
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var ev struct{ Kind, Target, Result string }
				if err := json.Unmarshal([]byte(l), &ev); err != nil {
					t.Fatalf("nemesis record %q: %v", l, err)
				}
				var n int
				if ev.Kind != "commit-lost" || !strings.HasPrefix(ev.Target, "consumer-") {
					continue
				}
				if _, err := fmt.Sscanf(ev.Result, "done: %d COMMIT(s) lost", &n); err == nil {
					lost += n
				}
			}
			if tc.want == exitFail && lost == 0 {
				t.Errorf("the plant FAILed with no consumer COMMIT lost; the nemesis record:\n%s", b)
			}
			if !strings.Contains(string(b), "COMMIT(s) lost") {
				t.Errorf("the nemesis record does not count the lost COMMITs:\n%s", b)
			}
		})
	}
}
