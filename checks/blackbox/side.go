package blackbox

import (
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// The inbox, effect and business rows of the window, as the model keeps them.

// sideRow is an inbox, effect or business row change: 16 bytes, as
// there are millions.
type sideRow struct {
	tx   int32
	cons int32 // index into model.consumers ("" when the table names none)
	// ev is the event of the id the row names, when it was committed
	// before the row (index into model.events); else a stray (model.stray).
	ev       int32
	op       opCode
	hasEvent bool
}

// opCode is a binlog.Op in a byte: one of the three the binlog reader
// gives (rows), or any other as "?".
type opCode uint8

var opNames = []binlog.Op{binlog.Insert, binlog.Update, binlog.Delete, "?"}

func codeOf(op binlog.Op) opCode {
	if i := slices.Index(opNames[:3], op); i >= 0 {
		return opCode(i)
	}
	return 3
}

func (o opCode) String() string { return string(opNames[o]) }

// side reads an inbox, effect or business row change of transaction i.
// A consumer's name is kept once however many rows carry it (names).
func (m *model) side(i int, ch binlog.RowChange, id, consumer *profile.Field) sideRow {
	row := ch.After
	if ch.Op == binlog.Delete {
		row = ch.Before
	}
	s := sideRow{tx: int32(i), op: codeOf(ch.Op), ev: -1} // the stray ""
	if id != nil {
		var event string
		event, s.hasEvent = text(id.Lookup(row))
		ev := m.lastSide // a consumer writes an event's inbox row and effect together
		if ev == nil || ev.id != event {
			ev = m.eventByID(event)
		}
		if ev != nil {
			m.lastSide = ev
			s.ev = int32(ev.idx) // the event's copy of the id
		} else {
			s.ev = m.stray(event)
		}
	}
	name := ""
	if consumer != nil {
		name, _ = text(consumer.Lookup(row))
	}
	if len(m.consumers) == 0 || m.consumers[m.lastCons] != name { // else the last row's
		k, ok := m.names[name]
		if !ok {
			k = int32(len(m.consumers))
			name = strings.Clone(name) // see own
			m.names[name] = k
			m.consumers = append(m.consumers, name)
		}
		m.lastCons = k
	}
	s.cons = m.lastCons
	return s
}

// consumer is the name of the consumer of side row r.
func (m *model) consumer(r *sideRow) string { return m.consumers[r.cons] }

// eventOf is the event side row r names, if it is one (nil: it names
// none, or an event of another topic).
func (m *model) eventOf(r *sideRow) *event {
	if r.ev >= 0 {
		return m.events.at(int(r.ev))
	}
	return m.eventByID(m.idOf(r.ev))
}
