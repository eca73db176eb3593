package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The supervisor: one slot per process of a role (the order service, each
// relay, each consumer), each running as its own OS process and started
// again whenever it ends, until the run stops it. Every incarnation has
// its own actor name: the first is the slot's name ("relay-1"), the next
// ones add ".<n>" ("relay-1.2").

// restartDelay is how long the supervisor waits before starting a slot's
// process again (a process that cannot start, say while the database is
// down, is not restarted in a tight loop).
const restartDelay = 150 * time.Millisecond

// slot is one supervised process.
type slot struct {
	name   string
	r      *run
	launch Launch

	mu       sync.Mutex
	inc      int
	proc     Launched
	current  string // actor name of the running incarnation
	stopping bool
	started  chan struct{} // closed once the first incarnation runs
	done     chan struct{} // closed when the supervise loop has ended
	startErr error         // why the first incarnation could not start

	failedStarts int // since the last start that succeeded
	lastStartErr string
}

func (r *run) newSlot(s Slot) *slot {
	return &slot{name: s.Name, r: r, launch: s.Launch, started: make(chan struct{}), done: make(chan struct{})}
}

// actorName is the name of incarnation n of the slot.
func (s *slot) actorName(n int) string {
	if n == 1 {
		return s.name
	}
	return s.name + "." + strconv.Itoa(n)
}

// supervise starts the slot's process and starts it again whenever it
// ends, until stop. It records every start and exit as nemesis events.
func (s *slot) supervise(ctx context.Context) {
	defer close(s.done)
	first := true
	for {
		p, err := s.startOne(ctx)
		if first {
			s.mu.Lock()
			s.startErr = err
			s.mu.Unlock()
			close(s.started)
			first = false
		}
		if err == nil {
			exit, werr := p.Wait()
			s.exited(p, exit, werr)
		}
		if s.isStopping() || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(restartDelay):
		}
	}
}

// startOne starts the next incarnation.
func (s *slot) startOne(ctx context.Context) (Launched, error) {
	s.mu.Lock()
	s.inc++
	name := s.actorName(s.inc)
	s.mu.Unlock()
	p, err := s.launch(ctx, name)
	if err != nil {
		// The next start says why this one failed.
		s.mu.Lock()
		s.failedStarts++
		s.lastStartErr = oneLine(err.Error())
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Lock()
	s.proc, s.current = p, name
	why := "first start"
	if s.inc > 1 {
		why = "start " + strconv.Itoa(s.inc) + ", after its previous process ended"
	}
	if s.failedStarts > 0 {
		why += fmt.Sprintf(" (%d start(s) before failed; the last: %s)", s.failedStarts, s.lastStartErr)
		s.failedStarts, s.lastStartErr = 0, ""
	}
	s.mu.Unlock()
	s.r.note(evidence.Event{Kind: evidence.KindProcessStart, Target: name, PID: evidence.Ptr(int64(p.Pid())),
		Detail: fmt.Sprintf("slot %s, %s", s.name, why)})
	return p, nil
}

// exited records how an incarnation ended.
func (s *slot) exited(p Launched, exit Exit, werr error) {
	s.mu.Lock()
	name := s.current
	s.proc = nil
	s.mu.Unlock()
	how := exit.String()
	if werr != nil {
		how = "could not be waited for: " + werr.Error()
	}
	if exit.Signal == 0 && exit.Code != 0 {
		if last := lastLine(exit.Stderr); last != "" {
			how += ": " + last
		}
	}
	s.r.note(evidence.Event{Kind: evidence.KindProcessExit, Target: name, PID: evidence.Ptr(int64(p.Pid())), Detail: how})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 300 {
		l = l[:300] + "..."
	}
	return l
}

func (s *slot) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// running returns the running process and its actor name (nil between
// incarnations).
func (s *slot) running() (Launched, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc, s.current
}

// signal sends sig to the running process and returns it, or an error
// when none runs.
func (s *slot) signal(sig syscall.Signal) (Launched, string, error) {
	p, name := s.running()
	if p == nil {
		return nil, "", fmt.Errorf("slot %s has no running process", s.name)
	}
	if err := p.Signal(sig); err != nil {
		return nil, "", fmt.Errorf("%s to %s (pid %d): %w", sig, name, p.Pid(), err)
	}
	return p, name, nil
}

// stop ends the supervision: SIGCONT (a paused process must be able to
// stop), then SIGTERM for a clean stop, SIGKILL after grace, and waits.
func (s *slot) stop(grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	p := s.proc
	s.mu.Unlock()
	if p != nil {
		_ = p.Signal(syscall.SIGCONT)
		_ = p.Signal(syscall.SIGTERM)
	}
	select {
	case <-s.done:
		return
	case <-time.After(grace):
	}
	if p, _ := s.running(); p != nil {
		_ = p.Kill()
	}
	<-s.done
}
