// Package evidencetest reads event logs in tests the way a reviewer would:
// every line valid against the event schema, decoded strictly, seq strictly
// increasing.
package evidencetest

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// Read reads a whole log from r. A final line cut off by a killed process is
// not decoded and is reported through truncated; any other problem fails t.
func Read(t testing.TB, r io.Reader) (events []evidence.Event, truncated bool) {
	t.Helper()
	var last int64
	err := evidence.ScanLines(r, func(l evidence.Line) error {
		if len(l.Raw) > 0 && l.Raw[len(l.Raw)-1] != '}' {
			return nil // the truncated tail; ScanLines reports it next
		}
		if err := schemas.ValidateEventJSON(l.Raw); err != nil {
			return fmt.Errorf("line %d %s: %w", l.No, l.Raw, err)
		}
		e, err := evidence.DecodeEvent(l.Raw)
		if err != nil {
			return fmt.Errorf("line %d: %w", l.No, err)
		}
		if e.Seq <= last {
			return fmt.Errorf("line %d: seq %d after %d", l.No, e.Seq, last)
		}
		last = e.Seq
		events = append(events, e)
		return nil
	})
	if errors.Is(err, evidence.ErrTruncated) {
		return events, true
	}
	if err != nil {
		t.Fatalf("event log: %v", err)
	}
	return events, false
}

// Of returns the events of one kind, in order.
func Of(es []evidence.Event, kind evidence.Kind) []evidence.Event {
	var out []evidence.Event
	for _, e := range es {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}
