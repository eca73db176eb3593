package runner

import (
	"errors"
	"strings"
	"testing"
)

// TestProgressReasonOneLine: a reason made of many errors (errors.Join
// puts each on a line of its own) is one progress line, cut to a bounded
// length; the evidence keeps the whole reason.
func TestProgressReasonOneLine(t *testing.T) {
	var errs []error
	for i := 0; i < 15; i++ {
		errs = append(errs, errors.New("invariant x: count rows: invalid connection"))
	}
	reason := "end state: " + errors.Join(errs...).Error()
	got := progressReason(reason)
	if strings.Contains(got, "\n") {
		t.Errorf("progressReason spans %d lines:\n%s", strings.Count(got, "\n")+1, got)
	}
	if len(got) > progressReasonMax+60 {
		t.Errorf("progressReason is %d characters long; want about %d at most", len(got), progressReasonMax)
	}
	if !strings.HasSuffix(got, "(the evidence has the whole reason)") {
		t.Errorf("a cut reason does not say where the rest is: %q", got)
	}
	if got := progressReason("a; b"); got != "  a; b" {
		t.Errorf("progressReason(short) = %q", got)
	}
}
