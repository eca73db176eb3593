package blackbox

import (
	"hash/maphash"
	"slices"
	"strconv"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
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

// TestWarm holds warmIDs to the ids change probes: an outbox row's
// (inserted: after; updated or deleted: before), an inbox, effect or
// business row's (deleted: before, else after), in their order, and
// none of a row of another table, an id at a JSON path, a NULL or a
// number; and warm, over slots or none, changes nothing.
func TestWarm(t *testing.T) {
	col := func(c string) profile.Field { return profile.Field{Column: c} }
	biz := col("event")
	m := &model{prof: &profile.Profile{
		Outbox:   profile.Outbox{Table: "outbox", EventID: col("id")},
		Inbox:    &profile.Inbox{Table: "inbox", EventID: col("event_id")},
		Effect:   &profile.Effect{Table: "effect", EventID: profile.Field{Column: "doc", Path: []profile.Step{{Name: "id"}}}},
		Business: &profile.Business{Table: "orders", EventID: &biz},
	}}
	row := func(col, v string) map[string]binlog.Value { return map[string]binlog.Value{col: v, "other": "x"} }
	chs := []binlog.RowChange{
		{Table: "outbox", Op: binlog.Insert, After: row("id", "a")},
		{Table: "outbox", Op: binlog.Update, Before: row("id", "b"), After: row("id", "b2")},
		{Table: "outbox", Op: binlog.Delete, Before: row("id", "c")},
		{Table: "inbox", Op: binlog.Insert, After: row("event_id", "d")},
		{Table: "inbox", Op: binlog.Update, Before: row("event_id", "e0"), After: row("event_id", "e")},
		{Table: "inbox", Op: binlog.Delete, Before: row("event_id", "f")},
		{Table: "effect", Op: binlog.Insert, After: row("doc", `{"id":"g"}`)},
		{Table: "orders", Op: binlog.Insert, After: row("event", "h")},
		{Table: "other", Op: binlog.Insert, After: row("id", "i")},
		{Table: "outbox", Op: binlog.Insert, After: map[string]binlog.Value{"id": nil}},
		{Table: "outbox", Op: binlog.Insert, After: map[string]binlog.Value{"id": int64(7)}},
		{Table: "inbox", Op: binlog.Insert, After: row("id", "j")},
	}
	var want []uint64
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "h"} {
		want = append(want, maphash.String(idSeed, id))
	}
	if got := m.warmIDs(chs, nil); !slices.Equal(got, want) {
		t.Errorf("warmIDs hashed %d ids, %x; want a, b, c, d, e, f, h: %x", len(got), got, want)
	}
	m.warm(chs) // no slots: nothing to read
	m.ids.sized(4)
	m.warm(chs)
	if m.ids.n != 0 || slices.ContainsFunc(m.ids.slots, func(s uint64) bool { return s != 0 }) || len(m.ids.hashes) != len(want) {
		t.Errorf("warm filed %d ids, slots %x, hashed %d; want none filed, %d hashed", m.ids.n, m.ids.slots, len(m.ids.hashes), len(want))
	}
}

// TestWarmRecords: warmRecords hashes the ids the records carry in the
// profile's header, in order, and nothing when the id is in the value.
func TestWarmRecords(t *testing.T) {
	hdr := func(k, v string) []broker.Header {
		return []broker.Header{{Key: "other", Value: []byte("x")}, {Key: k, Value: []byte(v)}}
	}
	recs := []broker.Record{
		{Headers: hdr("event_id", "a")},
		{Headers: hdr("id", "b")},
		{},
		{Headers: []broker.Header{{Key: "event_id"}}},
		{Headers: hdr("event_id", "c")},
	}
	m := &model{prof: &profile.Profile{Topic: profile.Topic{EventID: profile.Locator{Header: "event_id"}}}}
	m.warmRecords(recs) // no slots: nothing
	m.ids.sized(4)
	m.warmRecords(recs)
	want := []uint64{maphash.String(idSeed, "a"), maphash.String(idSeed, "c")}
	if !slices.Equal(m.ids.hashes, want) || m.ids.n != 0 {
		t.Errorf("warmRecords hashed %x (filed %d); want a, c: %x", m.ids.hashes, m.ids.n, want)
	}
	m.prof.Topic.EventID = profile.Locator{Value: &profile.Field{Column: "payload", Path: []profile.Step{{Name: "id"}}}}
	m.ids.hashes = nil
	if m.warmRecords(recs); len(m.ids.hashes) != 0 {
		t.Errorf("an id in the value: warmRecords hashed %d", len(m.ids.hashes))
	}
}
