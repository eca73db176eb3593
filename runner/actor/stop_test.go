package actor_test

import (
	"bufio"
	"errors"
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
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// envStopper makes the test binary a process that arms its stop at
// AfterPublishBeforeMark on SIGUSR1 and passes that point every 5 ms,
// printing "passed N" after each pass (see TestMain).
const envStopper = "OFA_TEST_STOPPER"

func stopper() {
	faults := &fault.Injector{}
	defer actor.ArmStopsOnSignal(faults, []fault.Point{spec.AfterPublishBeforeMark})()
	fmt.Println("ready")
	for n := 1; ; n++ {
		if err := faults.Hit(spec.AfterPublishBeforeMark); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("passed", n)
		time.Sleep(5 * time.Millisecond)
	}
}

func state(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return s[i+2 : i+3]
}

// TestStopAtOnSignal: SIGUSR1 arms the process's --stop-at point; at its
// next pass the process stops itself (state T) and passes no further
// until SIGCONT, then goes on from there. Once the window has passed, a
// pass no longer stops it.
func TestStopAtOnSignal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envStopper+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if l := <-lines; l != "ready" {
		t.Fatalf("child said %q", l)
	}
	last := func() (n int) { // the last pass printed so far (0: none)
		for {
			select {
			case l := <-lines:
				fmt.Sscanf(l, "passed %d", &n)
			case <-time.After(20 * time.Millisecond):
				return n
			}
		}
	}
	pid := cmd.Process.Pid
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(actor.StopArmWindow)
	for state(pid) != "T" {
		if time.Now().After(deadline) {
			t.Fatalf("the child did not stop within %v of SIGUSR1 (state %q)", actor.StopArmWindow, state(pid))
		}
		time.Sleep(time.Millisecond)
	}
	at := last()
	time.Sleep(100 * time.Millisecond)
	if n := last(); n != 0 || state(pid) != "T" {
		t.Fatalf("stopped after pass %d, the child went on to pass %d (state %q)", at, n, state(pid))
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var n int
	select {
	case l := <-lines:
		fmt.Sscanf(l, "passed %d", &n)
	case <-time.After(time.Second):
	}
	if n != at+1 {
		t.Fatalf("after SIGCONT the child's first line is pass %d; want %d, the pass it stopped in", n, at+1)
	}
	// Unarmed, it passes without stopping.
	time.Sleep(100 * time.Millisecond)
	if s := state(pid); s == "T" {
		t.Fatal("the child stopped again without a signal")
	}
}

func TestParseStopAt(t *testing.T) {
	if _, err := actor.ParseStopAt([]string{"after-publish-before-mark", "claim-locked"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"nowhere"}, {"publish-refused"}, {"claim-locked", "intent-insert", "effect-commit-killed", "takeover-published"}} {
		if _, err := actor.ParseStopAt(bad); !errors.Is(err, actor.ErrUsage) {
			t.Errorf("ParseStopAt(%q) = %v; want a usage error", bad, err)
		}
	}
}
