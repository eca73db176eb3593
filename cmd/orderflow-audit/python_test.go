package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requirePython skips (fails under CI) unless Debian's python3 has the
// modules examples/python needs.
func requirePython(t *testing.T) {
	t.Helper()
	out, err := exec.Command("/usr/bin/python3", "-c", "import kafka, pymysql").CombinedOutput()
	if err == nil {
		return
	}
	msg := "examples/python needs /usr/bin/python3 with python3-kafka and python3-pymysql (apt-get install -y python3-kafka python3-pymysql): " + strings.TrimSpace(string(out))
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set: %s: %v", msg, err)
	}
	t.Skip(msg)
}

// pythonProfile is examples/python/profile.yaml with its relative paths
// made absolute, so that a copy works from a temporary directory, and
// edit applied (old, new, ... pairs, each old present).
func pythonProfile(t *testing.T, edit ...string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "python"))
	if err != nil {
		t.Fatal(err)
	}
	edit = append(edit,
		"migrations: [migrations/*.up.sql]", "migrations: ["+filepath.Join(dir, "migrations", "*.up.sql")+"]")
	for range 3 { // the service's, the relay's and the consumer's command
		edit = append(edit, "/usr/bin/python3 pipeline.py ", "/usr/bin/python3 "+filepath.Join(dir, "pipeline.py")+" ")
	}
	return profileCopy(t, filepath.Join(dir, "profile.yaml"), edit...)
}

// TestAuditPython audits examples/python, a pipeline that is not Go
// (CPython with kafka-python and PyMySQL), whose relay deletes what it
// published and whose tables and columns are its own, from its profile
// alone: under every fault kind it PASSes, with records, effects and
// faults on the observation line.
func TestAuditPython(t *testing.T) {
	requirePython(t)
	r := runAudit(t, pythonProfile(t), "--seed", "1", "--duration", "4s")
	if r.code != exitOK {
		t.Fatalf("exit %d; want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	line := strings.SplitN(r.stdout, "\n", 2)[0]
	for _, want := range []string{"profile python-shop", "lost 0, pending 0", "faults ", "PASS"} {
		if !strings.Contains(line, want) {
			t.Errorf("observation line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "events committed 0,") || strings.Contains(line, "effects 0,") {
		t.Errorf("observation line %q: nothing went through the pipeline", line)
	}
	if code, out, errs := runCLI(t, "verify", r.out); code != exitOK || !strings.Contains(out, "PASS") {
		t.Errorf("verify %s: exit %d; want 0 PASS\n%s%s", r.out, code, out, errs)
	}
}

// TestAuditPythonPlanted: the Python relay with its planted bug
// (--delete-first: rows deleted and committed before they are published)
// loses the events of a publish the broker refuses, and the audit names
// them lost-acked-not-published from the binlog's commit order: the
// delete committed, no record followed.
func TestAuditPythonPlanted(t *testing.T) {
	requirePython(t)
	p := pythonProfile(t, "relay --db {{db}} --topic {{topic}}", "relay --db {{db}} --topic {{topic}} --delete-first")
	r := runAudit(t, p, "--seed", "1", "--duration", "4s", "--faults", "produce-refused")
	if r.code != exitFail {
		t.Fatalf("exit %d; want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "FAIL lost-acked-not-published:") {
		t.Errorf("stdout lacks a FAIL of rule lost-acked-not-published:\n%s", r.stdout)
	}
}
