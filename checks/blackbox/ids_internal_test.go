package blackbox

import (
	"strconv"
	"testing"
)

// TestIDs adds ten thousand events to a table sized for none (so that it
// grows ten times over), each twice (the second finds the first), then
// finds each by its id, as a string and as bytes, finds no event for ids
// never filed or filed for another topic, and holds isID to both.
func TestIDs(t *testing.T) {
	m := &model{}
	m.ids.sized(0)
	const n = 10_000
	for k := range n {
		id := "e" + strconv.Itoa(k)
		if dup := m.addEvent(event{id: id}); dup != nil {
			t.Fatalf("addEvent(%s) found event %d", id, dup.idx)
		}
		if dup := m.addEvent(event{id: id}); dup == nil || dup.idx != int32(k) {
			t.Fatalf("addEvent(%s) again = %+v; want event %d, not a second", id, dup, k)
		}
	}
	if m.events.len() != n {
		t.Fatalf("%d events; want %d", m.events.len(), n)
	}
	m.ids.fileOther("other")
	if len(m.ids.slots) < 2*n || m.ids.n != n {
		t.Fatalf("%d slots for %d ids (filed %d); want at least twice as many", len(m.ids.slots), n, m.ids.n)
	}
	for k := range n {
		id := "e" + strconv.Itoa(k)
		if ev := m.eventByID(id); ev == nil || ev.idx != int32(k) {
			t.Fatalf("eventByID(%s) = %+v; want event %d", id, ev, k)
		}
		if ev := m.eventByBytes([]byte(id)); ev == nil || ev.idx != int32(k) {
			t.Fatalf("eventByBytes(%s) = %+v; want event %d", id, ev, k)
		}
		if !m.isID(id) {
			t.Fatalf("isID(%s) = false", id)
		}
	}
	for _, id := range []string{"", "e", "e10000", "e-1", "x1", "other"} {
		if ev := m.eventByID(id); ev != nil {
			t.Errorf("eventByID(%q) = event %d; want none", id, ev.idx)
		}
	}
	if !m.isID("other") || m.isID("e10000") {
		t.Errorf("isID(other) = %v, isID(e10000) = %v; want true, false", m.isID("other"), m.isID("e10000"))
	}
	if (&model{}).eventByID("e1") != nil {
		t.Error("an empty model found an event")
	}
}
