package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

// ErrInfraLost wraps (with infra.ErrUnavailable) the error of a run whose
// database or broker stopped answering or went away while it ran: the
// scenarios it affected are NOT_RUN, never FAIL.
var ErrInfraLost = errors.New("infrastructure lost mid-run")

// lostError says which part of the infrastructure was lost and how.
type lostError struct {
	database bool // the database (else the broker)
	err      error
}

func (e *lostError) Error() string { return e.err.Error() }
func (e *lostError) Unwrap() []error {
	return []error{ErrInfraLost, infra.ErrUnavailable, e.err}
}

// watchInterval is how often the watchdog probes; lostAfter consecutive
// failed probes make the infrastructure lost. A probe is bounded by
// infra.ProbeTimeout, so a server that stops answering is found lost
// within about lostAfter*(watchInterval+ProbeTimeout), whatever the
// scenario is waiting for.
const (
	watchInterval = 500 * time.Millisecond
	lostAfter     = 2
)

// watchdog probes the database and an external broker while the run goes
// on, and cancels the run (with a *lostError as the cause) once one of
// them is lost. The embedded broker lives in this process and is not
// probed.
type watchdog struct {
	server *infra.Server
	kafka  *infra.Kafka
	cancel context.CancelCauseFunc
	// lostCtx is cancelled when the infrastructure is lost, and only
	// then: for work that an interrupt must let finish (a scratch
	// database's creation) but a lost server must not hold.
	lostCtx    context.Context
	lostCancel context.CancelCauseFunc

	mu   sync.Mutex
	lost *lostError
	held int // while > 0, failed probes do not count (hold)

	stop chan struct{}
	done chan struct{}
}

func startWatchdog(ctx context.Context, server *infra.Server, kafka *infra.Kafka, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{server: server, kafka: kafka, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
	w.lostCtx, w.lostCancel = context.WithCancelCause(context.WithoutCancel(ctx))
	go w.loop(ctx)
	return w
}

func (w *watchdog) loop(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	failed := 0
	for {
		// It goes on after ctx ends (Ctrl-C): the cleanup that follows
		// must not wait on a server that is gone.
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if w.isHeld() {
			failed = 0
			continue
		}
		if lerr := w.probe(ctx); lerr == nil {
			failed = 0
		} else if failed++; failed >= lostAfter && !w.isHeld() {
			w.setLost(lerr)
			return
		}
	}
}

// probe checks the database, then a broker that is not embedded, each bounded by
// infra.ProbeTimeout.
func (w *watchdog) probe(ctx context.Context) *lostError {
	if err := w.server.Probe(ctx); err != nil {
		return &lostError{database: true, err: err}
	}
	if w.kafka.Mode != infra.ModeEmbedded {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), infra.ProbeTimeout)
		defer cancel()
		if err := w.kafka.Ping(pctx); err != nil {
			return &lostError{err: err}
		}
	}
	return nil
}

func (w *watchdog) setLost(l *lostError) {
	w.mu.Lock()
	if w.lost == nil {
		w.lost = l
	}
	w.mu.Unlock()
	w.cancel(l)
	w.lostCancel(l)
}

// hold suspends the probing while a scenario takes the database down on
// purpose (the chaos scenario's database crash), until release is called.
func (w *watchdog) hold() (release func()) {
	w.mu.Lock()
	w.held++
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			w.held--
			w.mu.Unlock()
		})
	}
}

func (w *watchdog) isHeld() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held > 0
}

// Lost returns what was lost, or nil.
func (w *watchdog) Lost() *lostError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

// check probes now (after a scenario did not pass: was it the
// infrastructure?) and records a loss when lostAfter probes in a row fail:
// one slow answer on a loaded machine must not turn a failed scenario into
// one that did not run.
func (w *watchdog) check(ctx context.Context) *lostError {
	if l := w.Lost(); l != nil {
		return l
	}
	var l *lostError
	for range lostAfter {
		if l = w.probe(ctx); l == nil {
			return nil
		}
	}
	w.setLost(l)
	return l
}

// Stop ends the probing; check still works.
func (w *watchdog) Stop() {
	close(w.stop)
	<-w.done
}
