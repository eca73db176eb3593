package blackbox

import (
	"hash/maphash"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// ids finds an event by its id: open addressing over the events' own
// ids, 8 bytes a slot and at most half the slots used, rather than a map
// of the ids to the events (about 40 bytes an id at a million). A slot
// holds the top 32 bits of the id's hash, which spares most comparisons,
// and 1 + the event's index into model.events; 0 is empty. The ids of
// committed rows routed to another topic, which are no event of the
// topic (isID), are few and kept in a map apart.
type ids struct {
	slots []uint64
	n     int
	other map[string]struct{}
	// hashes are the ids' hashes warm reads the slots of.
	hashes []uint64
}

// idSeed seeds the hash of ids (an id is hostile input: a seed of this
// process keeps anyone from choosing ids that collide).
var idSeed = maphash.MakeSeed()

// sized makes room for about hint ids before the slots grow.
func (x *ids) sized(hint int) {
	x.slots = make([]uint64, max(16, 1<<bits.Len(uint(2*hint))))
}

// eventByID is the event of id (nil: none of the topic has it).
func (m *model) eventByID(id string) *event {
	if len(m.ids.slots) == 0 {
		return nil
	}
	_, _, ev := m.probe(id)
	return ev
}

// probe finds id in the slots (which are never full): its event, or the
// empty slot where it would go; h is its hash.
func (m *model) probe(id string) (slot uint64, h uint64, ev *event) {
	x := &m.ids
	h = maphash.String(idSeed, id)
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return i, h, nil
		}
		if s>>32 == h>>32 {
			if ev := m.events.at(int(uint32(s)) - 1); ev.id == id {
				return i, h, ev
			}
		}
	}
}

// warm reads the slot of the id index where the probe of each row
// change of chs that change would probe begins: an outbox, inbox, effect
// or business row whose id is a text column (warmIDs). A hint, which
// changes nothing: at a million ids the slots are far larger than a
// cache, and a probe, one row at a time among the rest of a row's work,
// waits for memory each time (most of the model's time in a large
// transaction). Read here in a loop of loads that wait on nothing, the
// waits overlap, and change finds the slots cached.
func (m *model) warm(chs []binlog.RowChange) {
	if len(m.ids.slots) == 0 {
		return
	}
	m.ids.hashes = m.warmIDs(chs, m.ids.hashes[:0])
	m.loadSlots()
}

// loadSlots reads the slot where the probe of each hash of m.ids.hashes
// begins, in a loop of loads that wait on nothing.
func (m *model) loadSlots() {
	mask := uint64(len(m.ids.slots) - 1)
	var sum uint64
	for _, h := range m.ids.hashes { // a loop this short keeps many loads in flight
		sum += m.ids.slots[h&mask]
	}
	runtime.KeepAlive(sum) // the loads are kept, their sum unused
}

// warmIDs appends to hs the hash of the id each row change of chs names
// in a text column, as change will probe it: an outbox row's, an inbox,
// effect or business row's. An id at a JSON path is left out (finding
// it costs more than a probe), as is one that is not text.
func (m *model) warmIDs(chs []binlog.RowChange, hs []uint64) []uint64 {
	p := m.prof
	for k := range chs {
		ch := &chs[k]
		var f *profile.Field
		switch {
		case ch.Table == p.Outbox.Table:
			f = &p.Outbox.EventID
		case p.Inbox != nil && ch.Table == p.Inbox.Table:
			f = &p.Inbox.EventID
		case p.Effect != nil && ch.Table == p.Effect.Table:
			f = &p.Effect.EventID
		case p.Business != nil && ch.Table == p.Business.Table:
			f = p.Business.EventID
		}
		if f == nil || len(f.Path) > 0 {
			continue
		}
		row := ch.After // as outboxChange and side read it
		if ch.Op == binlog.Delete || (ch.Op == binlog.Update && f == &p.Outbox.EventID) {
			row = ch.Before
		}
		if id, ok := row[f.Column].(string); ok {
			hs = append(hs, maphash.String(idSeed, id))
		}
	}
	return hs
}

// eventByBytes is eventByID of an id in bytes (a record's header),
// without copying them to a string.
func (m *model) eventByBytes(b []byte) *event {
	return m.eventByID(unsafe.String(unsafe.SliceData(b), len(b)))
}

// addEvent adds ev to m.events and files it under its id, unless an
// event has that id: it returns that event then, and adds nothing. One
// probe finds the one or the place for the other.
func (m *model) addEvent(ev event) *event {
	x := &m.ids
	if 2*(x.n+1) > len(x.slots) {
		old := x.slots
		x.slots = make([]uint64, max(16, 2*len(old)))
		for _, s := range old {
			if s != 0 {
				i, _, _ := m.probe(m.events.at(int(uint32(s)) - 1).id) // not there yet: its empty slot
				x.slots[i] = s
			}
		}
	}
	i, h, kept := m.probe(ev.id)
	if kept == nil {
		ev.idx = int32(m.events.len())
		x.slots[i] = h>>32<<32 | uint64(m.events.add(ev)+1)
		x.n++
	}
	return kept
}

// stray keeps id, which names no event when a side row or a record
// naming it is read, and returns what that row's or record's ev holds
// for it: -1 - its index into m.strays ("", strays[0], is -1).
func (m *model) stray(id string) int32 {
	if id == "" {
		return -1
	}
	m.strays = append(m.strays, m.ar.str(id)) // see own
	return -int32(len(m.strays))
}

// idOf is the id a side row's or a record's ev names: its event's, or a
// stray's.
func (m *model) idOf(ev int32) string {
	if ev >= 0 {
		return m.events.at(int(ev)).id
	}
	return m.strays[-1-ev]
}

// fileOther files the id of a committed row of another topic.
func (x *ids) fileOther(id string) {
	if x.other == nil {
		x.other = map[string]struct{}{}
	}
	x.other[id] = struct{}{}
}

// isID reports whether id is the id of a committed outbox row, for the
// topic or not.
func (m *model) isID(id string) bool {
	if m.eventByID(id) != nil {
		return true
	}
	_, ok := m.ids.other[id]
	return ok
}
