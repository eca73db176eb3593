package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// exploreProfile runs explore --profile P with args as a process of the
// built binary, its private servers in a TMPDIR of its own, and checks
// that it left no server behind.
func exploreProfile(t *testing.T, profile, outDir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	infratest.RequireMariaDB(t)
	if testing.Short() {
		t.Skip("runs audits")
	}
	tmp := t.TempDir()
	cmd := exec.Command(binary(t), append([]string{"explore", "--profile", profile, "--out-dir", outDir, "--progress", "off"}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	privateGone(t, tmp)
	return cmd.ProcessState.ExitCode(), so.String(), se.String()
}

// TestExploreProfilePlanted: explore --profile over the reference profile
// with a bug planted in its relay's command (records without a key) fails
// the first seed with record-mismatch, keeps its bundle, shrinks its
// schedule of kills to none, and prints the audit command that replays
// it; that command fails again with the same rule.
func TestExploreProfilePlanted(t *testing.T) {
	start := "--topic {{topic}} --lease 2s"
	p := referenceProfile(t, start+`"`, start+` --plant publish-without-key"`)
	out := t.TempDir()
	code, stdout, stderr := exploreProfile(t, p, out, "--seeds", "2", "--duration", "2s", "--faults", "kill", "--shrink-runs", "2")
	if code != exitFail {
		t.Fatalf("exit %d; want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"seed 2     FAIL", "rules=record-mismatch", "kept " + filepath.Join(out, "seed-2", "audit.json"),
		"shrunk seed 2 in 2 run(s): 0 fault(s), 2s; rule record-mismatch still fails"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "seed-2", "audit", "profile.yaml")); err != nil {
		t.Errorf("the failing seed's bundle was not kept: %v", err)
	}
	_, replay, ok := strings.Cut(stdout, "replay:\n")
	replay = strings.TrimSpace(replay)
	wantReplay := "orderflow-audit audit --profile " + p + " --seed 2 --duration 2s --faults kill --only-faults none"
	if !ok || replay != wantReplay {
		t.Fatalf("replay %q; want %q", replay, wantReplay)
	}
	r := runAudit(t, p, strings.Fields(strings.TrimPrefix(replay, "orderflow-audit audit --profile "+p))...)
	if r.code != exitFail || !strings.Contains(r.stdout, "FAIL record-mismatch:") || !strings.Contains(r.stdout, "faults none") {
		t.Errorf("the replay: exit %d; want 1 with a FAIL of record-mismatch and no fault\nstdout:\n%s", r.code, r.stdout)
	}
}

// TestExploreProfileClean: the reference profile as it is passes a seed
// with kills, and nothing of it is kept.
func TestExploreProfileClean(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := exploreProfile(t, referenceProfile(t), out, "--seeds", "3", "--duration", "2s", "--faults", "kill")
	if code != exitOK || !strings.Contains(stdout, "seed 3     PASS") || !strings.Contains(stdout, "kill:") {
		t.Fatalf("exit %d; want 0 with seed 3 PASS after kills\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if es, _ := os.ReadDir(out); len(es) != 0 {
		t.Errorf("a passing seed left %d entries in --out-dir", len(es))
	}
}

// TestExploreProfileFlags: the chaos scenario's own flags are refused
// with a profile, and so is a fault kind that does not exist.
func TestExploreProfileFlags(t *testing.T) {
	p := filepath.Join("..", "..", "profiles", "reference.yaml")
	for _, args := range [][]string{
		{"--orders", "5"}, {"--relays", "3"}, {"--plant", "publish-without-key"},
		{"--faults", "gremlin"}, {"--only-faults", "0"}, {"--duration", "1ms"},
	} {
		code, _, stderr := runCLI(t, append([]string{"explore", "--profile", p, "--out-dir", t.TempDir()}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "explore") {
			t.Errorf("explore --profile %v: exit %d, stderr %q; want exit 2 naming the problem", args, code, stderr)
		}
	}
}

// TestAuditReplayArgs: the replay of an audit names the seed, the
// duration and kinds when not the defaults, and --only-faults as
// nemesis.ParseOnly reads it back.
func TestAuditReplayArgs(t *testing.T) {
	a := &auditSubject{path: "my profiles/p.yaml"}
	c := nemesis.Config{Duration: 3e9, Kinds: []nemesis.Kind{nemesis.Kill}, Only: []int{2, 5}}
	want := "orderflow-audit audit --profile 'my profiles/p.yaml' --seed 4 --duration 3s --faults kill --only-faults 2,5"
	if got := a.replay(4, c); got != want {
		t.Errorf("replay = %q; want %q", got, want)
	}
	if got := a.replay(4, nemesis.Config{Duration: 5e9, Kinds: []nemesis.Kind{}}); got != "orderflow-audit audit --profile 'my profiles/p.yaml' --seed 4 --faults none" {
		t.Errorf("replay without faults = %q", got)
	}
}
