package actor_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/actor"
)

// envParent makes the test binary act as a parent that starts an actor
// with actor.Start and then waits to be killed (see TestMain).
const envParent = "OFA_TEST_ACTOR_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(envStopper) != "" {
		stopper()
	}
	if exe := os.Getenv(envParent); exe != "" {
		p, err := actor.Start(context.Background(), exe, actor.Spec{Role: actor.Relay}, nil)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(p.Pid())
		select {} // until killed
	}
	os.Exit(m.Run())
}

// alive tells whether pid runs (a zombie nobody reaped yet does not).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestActorDiesWithParent: an actor child started by Start dies within a
// second of its parent's SIGKILL, instead of living on (writing into the
// staging directory, holding a connection) until its own work ends.
func TestActorDiesWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only")
	}
	// The actor: a process that would run for a minute.
	dir := t.TempDir()
	script := filepath.Join(dir, "actor.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self, "-test.run=^$")
	parent.Env = append(os.Environ(), envParent+"="+script)
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("parent: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("parent said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	if !alive(child) {
		t.Fatalf("the actor (pid %d) is not running before its parent is killed", child)
	}

	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	killed := time.Now()
	for alive(child) {
		if time.Since(killed) > time.Second {
			t.Fatalf("the actor (pid %d) still runs %v after its parent's SIGKILL", child, time.Since(killed).Round(time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the actor was gone %v after its parent's SIGKILL", time.Since(killed).Round(time.Millisecond))
}
