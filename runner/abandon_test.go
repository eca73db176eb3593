package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSafeRunAbandonsAStuckScenario: a scenario that ignores its context
// is abandoned abandonGrace after the context ends, with errAbandoned; one
// that returns on its context's end is not; a panic is an error.
func TestSafeRunAbandonsAStuckScenario(t *testing.T) {
	defer func(g time.Duration) { abandonGrace = g }(abandonGrace)
	abandonGrace = 50 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	stuck := Scenario{Run: func(context.Context, *Env) error { <-release; return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err := safeRun(ctx, &Env{}, stuck)
	if !errors.Is(err, errAbandoned) {
		t.Fatalf("stuck scenario: err = %v, want errAbandoned", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("abandoned after %v", d)
	}
	if !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("error %q does not say why its context ended", err)
	}

	polite := Scenario{Run: func(ctx context.Context, _ *Env) error { <-ctx.Done(); return ctx.Err() }}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if err := safeRun(ctx2, &Env{}, polite); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errAbandoned) {
		t.Errorf("a scenario that returns on its context: err = %v, want its own error", err)
	}

	boom := Scenario{Run: func(context.Context, *Env) error { panic("boom") }}
	if err := safeRun(context.Background(), &Env{}, boom); err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Errorf("panic: err = %v", err)
	}
	ok := Scenario{Run: func(context.Context, *Env) error { return nil }}
	if err := safeRun(context.Background(), &Env{}, ok); err != nil {
		t.Errorf("clean scenario: err = %v", err)
	}
}
