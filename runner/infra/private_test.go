package infra_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// connectPrivate starts a private mariadbd and connects to it.
func connectPrivate(t *testing.T) (*infratest.MariaDB, *infra.Server) {
	t.Helper()
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	s, err := infra.Connect(t.Context(), m.Config())
	if err != nil {
		t.Fatalf("connect to the private server: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// within fails the test unless f returns within d, and returns its error.
func within(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	start := time.Now()
	err := f()
	if took := time.Since(start); took > d {
		t.Errorf("%s took %v; want at most %v", what, took.Round(time.Millisecond), d)
	}
	return err
}

// TestStoppedServerBoundedCalls: against a server stopped with SIGSTOP
// (it keeps its connections and answers nothing), every call of this
// package ends within its bound instead of hanging: the probe, the login
// with the DSN's own timeout, the creation and the drop of a scratch
// database. Killed, the server is found unreachable at once.
func TestStoppedServerBoundedCalls(t *testing.T) {
	m, s := connectPrivate(t)
	sc, err := s.CreateScratch(t.Context(), infra.ScratchName("t", infratest.RandomID()), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Probe(t.Context()); err != nil {
		t.Fatalf("Probe of a running server: %v", err)
	}

	m.Pause()
	slack := time.Second // a loaded machine
	err = within(t, infra.ProbeTimeout+slack, "Probe of a stopped server", func() error { return s.Probe(t.Context()) })
	if !errors.Is(err, infra.ErrUnavailable) {
		t.Errorf("Probe of a stopped server = %v; want ErrUnavailable", err)
	}
	cfg := m.Config()
	cfg.Timeout = time.Second // ?timeout=1s
	err = within(t, cfg.Timeout+slack, "Connect with timeout=1s to a stopped server", func() error {
		s2, err := infra.Connect(t.Context(), cfg)
		if err == nil {
			s2.Close()
		}
		return err
	})
	if !errors.Is(err, infra.ErrUnavailable) {
		t.Errorf("Connect to a stopped server = %v; want ErrUnavailable", err)
	}
	err = within(t, infra.CleanupTimeout+slack, "CreateScratch on a stopped server", func() error {
		_, err := s.CreateScratch(context.Background(), infra.ScratchName("t", infratest.RandomID()), "r1")
		return err
	})
	if err == nil {
		t.Errorf("CreateScratch on a stopped server succeeded")
	}
	ctx, cancel := infra.CleanupContext(context.Background())
	err = within(t, infra.CleanupTimeout+slack, "Drop on a stopped server", func() error { return sc.Drop(ctx) })
	cancel()
	if err == nil {
		t.Errorf("Drop on a stopped server succeeded")
	}

	m.Resume()
	if err := s.Probe(t.Context()); err != nil {
		t.Fatalf("Probe after SIGCONT: %v", err)
	}
	m.Kill()
	err = within(t, slack, "Probe of a killed server", func() error { return s.Probe(t.Context()) })
	if !errors.Is(err, infra.ErrUnavailable) {
		t.Errorf("Probe of a killed server = %v; want ErrUnavailable", err)
	}
}

// TestLeftovers: a scratch database whose run holds its lock is alive and
// is not dropped; one whose run holds none is a leftover and is dropped; a
// database without our marker is not listed at all.
func TestLeftovers(t *testing.T) {
	_, s := connectPrivate(t)
	ctx := t.Context()
	live, err := s.HoldLock(ctx, infra.LockName("live_run"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	if _, err := s.HoldLock(ctx, infra.LockName("live_run")); err == nil {
		t.Errorf("a second session took a held run lock")
	}
	alive, err := s.CreateScratch(ctx, "ofa_live_run_x", "live_run")
	if err != nil {
		t.Fatal(err)
	}
	dead, err := s.CreateScratch(ctx, "ofa_dead_run_x", "dead_run")
	if err != nil {
		t.Fatal(err)
	}
	// A verifier's scratch database (verify --mysql-dsn) holds the lock
	// of its own name.
	verifying, err := s.CreateScratch(ctx, "ofa_verify_x", "some_evidence_run")
	if err != nil {
		t.Fatal(err)
	}
	verifyLock, err := s.HoldLock(ctx, "ofa_verify_x")
	if err != nil {
		t.Fatal(err)
	}
	defer verifyLock.Release()
	alive.DB.Close()
	dead.DB.Close()
	verifying.DB.Close()
	if _, err := s.DB().ExecContext(ctx, "CREATE DATABASE ofa_not_ours"); err != nil {
		t.Fatal(err)
	}

	ls, err := s.Leftovers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range ls {
		got[l.Name] = l.Alive
	}
	want := map[string]bool{"ofa_live_run_x": true, "ofa_dead_run_x": false, "ofa_verify_x": true}
	if len(got) != len(want) || !got["ofa_live_run_x"] || got["ofa_dead_run_x"] || !got["ofa_verify_x"] {
		t.Fatalf("Leftovers = %v; want %v (and not ofa_not_ours)", got, want)
	}
	for _, l := range ls {
		err := s.DropLeftover(ctx, l)
		switch {
		case l.Alive && !errors.Is(err, infra.ErrAlive):
			t.Errorf("DropLeftover(%s, alive) = %v; want ErrAlive", l.Name, err)
		case !l.Alive && err != nil:
			t.Errorf("DropLeftover(%s, dead) = %v", l.Name, err)
		}
	}
	live.Release()
	verifyLock.Release()
	ls, err = s.Leftovers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Name != "ofa_live_run_x" || ls[0].Alive || ls[1].Name != "ofa_verify_x" || ls[1].Alive {
		t.Fatalf("after the drop and the releases: Leftovers = %+v; want ofa_live_run_x and ofa_verify_x, no longer alive", ls)
	}
}
