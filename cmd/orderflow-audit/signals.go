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
	fmt.Fprintf(stderr, "%s: second %s: exiting at once without cleaning up; scratch databases left on the server "+
		"are dropped by '%s clean'\n", progName, signalName(sig), progName)
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
