package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// errInterrupted is the cause of a context cancelled by a signal or a
// closed output; its message says which.
var errInterrupted = errors.New("interrupted")

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// interrupts cancels ctx (through cancel) on the first signal, with the
// signal named in its cause; commands stop and clean up, each step bounded.
// A second signal exits at once with 128+signal, without cleaning up.
func interrupts(sigs <-chan os.Signal, cancel context.CancelCauseFunc, stderr io.Writer, exit func(int)) {
	sig := <-sigs
	cancel(fmt.Errorf("%w by %s", errInterrupted, signalName(sig)))
	sig = <-sigs
	fmt.Fprintf(stderr, "%s: second %s: exiting at once without cleaning up; a private server ends with the run "+
		"(the next run removes its directory), scratch databases left on an external server are dropped by '%s clean'\n",
		progName, signalName(sig), progName)
	code := 128 + 2
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	exit(code)
}

// syncWriter serialises writes: run's progress, its interrupt notice and
// the final message may come from different goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// pipeGuard stops the run like an interrupt when its output is a closed
// pipe (run | head -1): the run cleans up and records that it was
// interrupted instead of dying of SIGPIPE halfway.
type pipeGuard struct {
	w      io.Writer
	name   string
	cancel context.CancelCauseFunc
}

func (g *pipeGuard) Write(p []byte) (int, error) {
	n, err := g.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		g.cancel(fmt.Errorf("%w: %s was closed (broken pipe)", errInterrupted, g.name))
	}
	return n, err
}

// interruption returns the cause of ctx when a signal (or a closed output
// seen by a pipeGuard) cancelled it, else nil.
func interruption(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, errInterrupted) {
		return cause
	}
	return nil
}

// closedPipe returns an interruption when err is a write to a closed pipe
// (verify | head -1): the reader went away, which is no failure of the
// evidence; else nil.
func closedPipe(err error, name string) error {
	if errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("%w: %s was closed", errInterrupted, name)
	}
	return nil
}

// interrupted reports an interrupted verify or report on stderr, in the
// words run uses ("interrupted by SIGINT"), with what is known (note) if
// anything, and returns exit 4: the command did not finish what it was
// asked, so nothing was decided for whoever reads its exit code.
func interrupted(stderr io.Writer, cmd string, cause error, note string) int {
	if note != "" {
		fmt.Fprintf(stderr, "%s %s: %v (%s)\n", progName, cmd, cause, note)
	} else {
		fmt.Fprintf(stderr, "%s %s: %v\n", progName, cmd, cause)
	}
	return exitInconclusive
}
