package actor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is an actor running as a child process, started by Start.
type Process struct {
	Spec Spec
	// URL is the orders actor's base URL ("http://127.0.0.1:PORT"), read
	// from its first stdout line; empty for the other roles.
	URL string

	cmd    *exec.Cmd
	stdout lockedBuffer
	stderr lockedBuffer
	copied chan struct{} // closed when stdout is drained
}

// Exit is how a child process ended.
type Exit struct {
	Code   int            // exit code; -1 when a signal ended it
	Signal syscall.Signal // the signal that ended it, or 0
	Stdout string
	Stderr string
}

// Killed reports whether SIGKILL ended the process (a fault point armed
// with kill, or Process.Kill).
func (e Exit) Killed() bool { return e.Signal == syscall.SIGKILL }

func (e Exit) String() string {
	if e.Signal != 0 {
		return "killed by signal " + strconv.Itoa(int(e.Signal)) + " (" + e.Signal.String() + ")"
	}
	return fmt.Sprintf("exit %d", e.Code)
}

// StartTimeout bounds how long Start waits for an orders actor's listening
// line.
const StartTimeout = 15 * time.Second

// Start runs exe (this binary) with s.Args() and the parent's environment
// plus env (see Env). When ctx ends the child gets SIGTERM, then SIGKILL
// after 5 s; when this process dies, the child gets SIGKILL at once (on
// Linux). For the orders role Start waits for the listening line and
// sets URL; a child that exits first is an error carrying its stderr.
func Start(ctx context.Context, exe string, s Spec, env []string) (*Process, error) {
	cmd := exec.CommandContext(ctx, exe, s.Args()...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	dieWithParent(cmd)
	p := &Process{Spec: s, cmd: cmd, copied: make(chan struct{})}
	cmd.Stderr = &p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start actor %s: %w", s.Role, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start actor %s: %w", s.Role, err)
	}
	first := make(chan string, 1)
	go func() {
		defer close(p.copied)
		br := bufio.NewReader(out)
		line, _ := br.ReadString('\n')
		p.stdout.Write([]byte(line))
		first <- line
		_, _ = io.Copy(&p.stdout, br)
	}()
	if s.Role != Orders {
		return p, nil
	}
	select {
	case line := <-first:
		if url, ok := strings.CutPrefix(strings.TrimSpace(line), ListeningPrefix); ok {
			p.URL = url
			return p, nil
		}
		exit, _ := p.Wait()
		return nil, fmt.Errorf("actor orders did not announce its address (%s): %s", exit, strings.TrimSpace(exit.Stderr))
	case <-time.After(StartTimeout):
		_ = p.Kill()
		exit, _ := p.Wait()
		return nil, fmt.Errorf("actor orders did not announce its address within %v (%s): %s", StartTimeout, exit, strings.TrimSpace(exit.Stderr))
	}
}

// Pid returns the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL.
func (p *Process) Kill() error { return p.cmd.Process.Kill() }

// Signal sends sig (e.g. SIGTERM for a clean stop).
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits for the child and returns how it ended. err is nil for any
// exit code and for death by a signal: read Exit. It is an error only when
// the child could not be waited for.
func (p *Process) Wait() (Exit, error) {
	err := p.cmd.Wait()
	<-p.copied
	e := Exit{Stdout: p.stdout.String(), Stderr: p.stderr.String()}
	if st, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		e.Code, e.Signal = -1, st.Signal()
		return e, nil
	}
	e.Code = p.cmd.ProcessState.ExitCode()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return e, fmt.Errorf("wait for actor %s: %w", p.Spec.Role, err)
	}
	return e, nil
}

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
