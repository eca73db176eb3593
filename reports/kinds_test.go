package reports

import (
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// TestEveryKindDrawn: the timeline draws every event kind of the event
// log as what it is, never as an unknown kind.
func TestEveryKindDrawn(t *testing.T) {
	fn := func(s string) string { return s }
	for _, k := range evidence.Kinds {
		lines := eventLines(logEvent{Event: evidence.Event{Kind: k, Actor: "x"}}, "a1", "a1", fn)
		if strings.Contains(strings.Join(lines, "\n"), "unknown kind") {
			t.Errorf("kind %s is drawn as %q", k, lines)
		}
	}
}

// TestClientRequestDrawn: the client's record of a request says what it
// sent as whom and what it got.
func TestClientRequestDrawn(t *testing.T) {
	fn := func(s string) string { return s }
	e := evidence.Event{Kind: evidence.KindOrderRequest, Actor: "scenario", Key: "k-1", Principal: "bob", Status: 201,
		OrderID: evidence.Ptr(int64(7))}
	got := strings.Join(eventLines(logEvent{Event: e}, "a1", "a1", fn), "\n")
	if want := "Note over a1: POST k-1 as bob: HTTP 201, order 7"; got != want {
		t.Errorf("drawn %q; want %q", got, want)
	}
	e.Principal, e.OrderID, e.Status = "", nil, 401
	if got := strings.Join(eventLines(logEvent{Event: e}, "a1", "a1", fn), "\n"); !strings.Contains(got, "no token: HTTP 401") {
		t.Errorf("drawn %q; want it to say no token and 401", got)
	}
}
