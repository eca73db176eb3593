package blackbox

import (
	"iter"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// The committed outbox rows of the window, as the model keeps them.

// event is one committed outbox row. A million are kept (128 bytes
// each): what only some profiles or broken rows have is in x.
type event struct {
	id        string
	aggregate string
	against   num // cursor kind: the row's position
	tx        int // index into model.txs of the inserting transaction
	x         *eventExtra
	// passed is the transaction where the relay's progress passed the
	// row (-1: never); changes counts the row's updates before that.
	passed  int
	changes int32
	idx     int32 // index into model.events; -1 for a row in dupRows
	// rec and last are the event's first and last record (indexes into
	// model.records, -1: none), nrec how many it has: its records are a
	// list through record.next, by partition and offset (model.recs).
	rec, last, nrec int32
	hasAgg          bool
}

// eventExtra is what an event has only under some profiles (a sequence,
// a correlation token, a decoder's headers) or when its payload does not
// decode.
type eventExtra struct {
	seq     any
	hasSeq  bool
	token   string            // load.correlate
	headers map[string]string // the headers its record must carry
	decErr  error
}

// extra is ev.x, made when first needed.
func (ev *event) extra() *eventExtra {
	if ev.x == nil {
		ev.x = &eventExtra{}
	}
	return ev.x
}

func (ev *event) seq() (any, bool) {
	if ev.x == nil {
		return nil, false
	}
	return ev.x.seq, ev.x.hasSeq
}

func (ev *event) token() string {
	if ev.x == nil {
		return ""
	}
	return ev.x.token
}

func (ev *event) headers() map[string]string {
	if ev.x == nil {
		return nil
	}
	return ev.x.headers
}

func (ev *event) decErr() error {
	if ev.x == nil {
		return nil
	}
	return ev.x.decErr
}

func (m *model) outboxChange(i int, ch binlog.RowChange) {
	o := m.prof.Outbox
	switch ch.Op {
	case binlog.Insert:
		m.insertEvent(i, ch.After)
	case binlog.Update:
		id, ok := text(o.EventID.Lookup(ch.Before))
		ev := m.eventByID(id)
		if !ok || ev == nil {
			return // a row of before the window, or of another topic
		}
		m.statusChange(i, ev, ch)
	case binlog.Delete:
		id, ok := text(o.EventID.Lookup(ch.Before))
		if ev := m.eventByID(id); ok && ev != nil && o.Progress.Kind == profile.ProgressDelete && ev.passed < 0 {
			ev.passed = i
		}
	}
}

func (m *model) insertEvent(i int, row map[string]any) {
	o := m.prof.Outbox
	ev := event{tx: i, passed: -1, rec: -1, last: -1}
	ev.id, _ = text(o.EventID.Lookup(row))
	ev.id = m.ar.str(ev.id) // see own
	if o.Aggregate != nil {
		ev.aggregate, ev.hasAgg = text(o.Aggregate.Lookup(row))
		ev.aggregate = m.ar.str(ev.aggregate)
	}
	if o.Sequence != nil {
		if seq, ok := o.Sequence.Lookup(row); ok || seq != nil {
			if t, ok := seq.(string); ok {
				seq = strings.Clone(t) // see own
			}
			ev.extra().seq, ev.x.hasSeq = seq, ok
		}
	}
	if o.Progress.Against != nil {
		if v, ok := o.Progress.Against.Lookup(row); ok {
			ev.against = toNum(v)
		}
	}
	if m.prof.Load != nil && m.client { // only the answer rule reads it
		if token, _ := text(m.prof.Load.Correlate.Lookup(row)); token != "" {
			ev.extra().token = m.ar.str(token)
		}
	}
	dec, err := decode(o.Payload.Decode, row[o.Payload.Column]) // hashed, not kept
	if dec.headers != nil || err != nil {
		ev.extra().headers, ev.x.decErr = dec.headers, err
	}
	// A row inserted already done (a service that publishes itself and
	// writes the row as sent) was passed by progress at its own commit.
	switch pr := o.Progress; pr.Kind {
	case profile.ProgressStatus:
		if pr.IsDone(row[pr.Column]) {
			ev.passed = i
		}
	case profile.ProgressCompleted:
		if row[pr.Column] != nil {
			ev.passed = i
		}
	}
	if err == nil && dec.topic != "" && dec.topic != m.topic {
		m.stats.OtherTopics++
		m.ids.fileOther(ev.id) // an id, of no event of the topic (isID)
		return
	}
	if m.addEvent(ev) != nil {
		dup := ev // ev itself stays off the heap
		dup.idx = -1
		m.dupRows = append(m.dupRows, &dup)
		return
	}
	m.values = append(m.values, valueHash(dec.value))
}

// allRows yields every committed outbox row of the topic: the events,
// then the rows that repeat an event's id.
func (m *model) allRows() iter.Seq[*event] {
	return func(yield func(*event) bool) {
		for ev := range m.events.each() {
			if !yield(ev) {
				return
			}
		}
		for _, ev := range m.dupRows {
			if !yield(ev) {
				return
			}
		}
	}
}

// statusChange reads an update of an event's row as progress (status,
// completed) and counts the changes before progress passed it.
func (m *model) statusChange(i int, ev *event, ch binlog.RowChange) {
	pr := m.prof.Outbox.Progress
	var doneBefore, doneAfter bool
	switch pr.Kind {
	case profile.ProgressStatus:
		doneBefore, doneAfter = pr.IsDone(ch.Before[pr.Column]), pr.IsDone(ch.After[pr.Column])
	case profile.ProgressCompleted:
		doneBefore, doneAfter = ch.Before[pr.Column] != nil, ch.After[pr.Column] != nil
	default:
		if ev.passed < 0 {
			ev.changes++
		}
		return
	}
	switch {
	case doneAfter && ev.passed < 0: // done before and not passed: impossible, see insertEvent
		ev.passed = i
	case doneBefore && !doneAfter:
		m.back = append(m.back, progressBack{tx: i, event: ev.id,
			message: "the row's " + pr.Column + " went back from done " + show(ch.Before[pr.Column]) + " to " + show(ch.After[pr.Column])})
	case ev.passed < 0:
		ev.changes++
	}
}

func show(v any) string {
	s, ok := profile.Text(v)
	if !ok {
		return "NULL"
	}
	return "'" + s + "'"
}
