package blackbox

// The broker's records of the window, as the model keeps them: read after
// the binlog, one at a time, each compared with its event's row as it
// passes.

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"iter"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// record is one record of the topic in the window: where it is, the
// event id it carries, and how it differs from its event's committed row
// (readBroker compares them as the records stream by: a record's key,
// value and headers are not kept).
type record struct {
	Offset    int64
	Partition int32
	// diff is 1 + the index into model.diffs of how the record differs
	// from its event's row (rule record-mismatch); 0: it does not, or it
	// names no event whose payload decodes.
	diff int32
	// next is the next record of the same event (-1: none; event.rec).
	next int32
	// ev is the event whose id the record carries (index into
	// model.events), else a stray (model.stray).
	ev    int32
	hasID bool
}

// readRecords completes the model built from the binlog with the broker's
// records (readBroker, compareValues). It writes the records, the events'
// lists of them and the model's arena, and nothing the invariants read
// (the tables, their arena, the transactions): they may run meanwhile.
func (m *model) readRecords(in Input) error {
	unsure, err := m.readBroker(in.Broker)
	if err != nil {
		return err
	}
	m.dropPayloads()
	if len(unsure) > 0 {
		if err := m.compareValues(in, unsure); err != nil {
			return err
		}
	}
	m.stats.Records = len(m.records)
	return nil
}

// readBroker takes the topic's records of the window, as the broker's
// log hands them out one at a time, and files them under their events.
// A record of an event is compared with the event's committed row there
// and then: its key, value and headers are not kept. Its value is
// compared by digest (valueHash): one whose digest differs is unsure,
// returned with a copy of its value for compareValues, as only the
// payload itself can tell a different value from the same JSON written
// otherwise, and say what it should have been.
func (m *model) readBroker(log *broker.Log) ([]unsure, error) {
	if log == nil {
		return nil, nil
	}
	m.partitions = log.Topics[m.topic]
	n := 0
	for i := range m.partitions {
		n += m.partitions[i].Count()
	}
	m.records = make([]record, 0, n)
	var out []unsure
	loc := m.prof.Topic.EventID
	one := func(r *broker.Record) {
		if r.Offset < m.start[r.Partition] {
			return
		}
		rec := record{Partition: r.Partition, Offset: r.Offset, next: -1}
		var ev *event
		if loc.Header != "" {
			if v, ok := r.Header(loc.Header); ok && v != nil {
				rec.hasID = true
				if ev = m.eventByBytes(v); ev == nil {
					rec.ev = m.stray(string(v))
				}
			}
		} else if loc.Value != nil {
			var id string
			if id, rec.hasID = text(profile.LookupPath(r.Value, loc.Value.Path)); rec.hasID {
				if ev = m.eventByID(id); ev == nil {
					rec.ev = m.stray(id)
				}
			}
		}
		k := int32(len(m.records))
		if ev != nil {
			rec.ev = ev.idx
			if ev.last < 0 {
				ev.rec = k
			} else {
				m.records[ev.last].next = k
			}
			ev.last = k
			if ev.nrec++; ev.nrec > 1 {
				m.stats.Duplicates++
			}
			if ev.decErr() == nil { // else the rule says so of the event
				u := unsure{rec: k, key: m.keyDiff(ev, r), headers: m.headerDiffs(ev, r)}
				if valueHash(r.Value) != m.values[ev.idx] {
					u.value = bytes.Clone(r.Value)
					out = append(out, u)
				} else {
					m.differ(&rec, u.key, "", u.headers)
				}
			}
		}
		m.records = append(m.records, rec)
	}
	err := log.EachBatch(m.topic, func(recs []broker.Record) error {
		for len(recs) > 0 { // a block's ids' slots warmed, then its records read
			n := min(len(recs), warmRows)
			m.warmRecords(recs[:n])
			for i := range recs[:n] {
				one(&recs[i])
			}
			recs = recs[n:]
		}
		return nil
	})
	return out, err
}

// warmRecords is warm (ids.go) for records whose event id is a header.
func (m *model) warmRecords(recs []broker.Record) {
	h := m.prof.Topic.EventID.Header
	if h == "" || len(m.ids.slots) == 0 {
		return
	}
	hs := m.ids.hashes[:0]
	for i := range recs {
		if v, ok := recs[i].Header(h); ok && v != nil {
			hs = append(hs, maphash.Bytes(idSeed, v))
		}
	}
	m.ids.hashes = hs
	m.loadSlots()
}

// unsure is a record whose value's digest is not its event's payload's
// (readBroker): its value, and how its key and headers differ.
type unsure struct {
	rec          int32
	value        []byte
	key, headers string
}

// dropPayloads lets the events' payload digests go once readBroker has
// compared the records with them (nothing else reads them).
func (m *model) dropPayloads() {
	m.values = nil
}

// differ files how record rec differs from its event's row: its key, its
// value and its headers, each "" where they agree.
func (m *model) differ(rec *record, diffs ...string) {
	d := slices.DeleteFunc(diffs, func(s string) bool { return s == "" })
	if len(d) > 0 {
		m.diffs = append(m.diffs, strings.Join(d, "; "))
		rec.diff = int32(len(m.diffs))
	}
}

// compareValues compares the unsure records' values with their events'
// payloads, read again from the binlog (scan, as build read it): equal
// bytes or the same JSON document (sameValue), else the record differs.
// The binlog is read again only when a value's digest differed, which a
// relay that publishes what it read never makes.
func (m *model) compareValues(in Input, unsure []unsure) error {
	byTx := map[int][]int32{} // transaction -> the unsure records' events
	want := map[int32][]byte{}
	for _, u := range unsure {
		ev := m.records[u.rec].ev
		if _, ok := want[ev]; !ok {
			want[ev] = nil
			tx := m.events.at(int(ev)).tx
			byTx[tx] = append(byTx[tx], ev)
		}
	}
	o := m.prof.Outbox
	_, err := scan(in, m.schema, nil, func(i int, t binlog.Transaction) {
		evs := byTx[i]
		for _, ch := range t.Changes {
			if len(evs) == 0 {
				break
			}
			if ch.Table != o.Table || ch.Op != binlog.Insert {
				continue
			}
			id, _ := text(o.EventID.Lookup(ch.After))
			for j, ev := range evs {
				if m.events.at(int(ev)).id == id { // the event's row: its first in its transaction
					dec, _ := decode(o.Payload.Decode, ch.After[o.Payload.Column])
					want[ev] = bytes.Clone(dec.value)
					evs = slices.Delete(evs, j, j+1)
					break
				}
			}
		}
	})
	if err != nil {
		return err
	}
	for _, u := range unsure {
		rec := &m.records[u.rec]
		value, payload := "", want[rec.ev]
		if !sameValue(u.value, payload) {
			value = fmt.Sprintf("value %s, want %s", showBytes(u.value), showBytes(payload))
		}
		m.differ(rec, u.key, value, u.headers)
	}
	return nil
}

// keyDiff says how record r's key differs from the one event ev's row
// says (topic.key), "" when it does not.
func (m *model) keyDiff(ev *event, r *broker.Record) string {
	if want, ok := m.wantKey(ev); ok && (r.Key == nil || string(r.Key) != want) {
		return fmt.Sprintf("key %s, want %q (%s)", showBytes(r.Key), want, m.prof.Topic.Key)
	}
	return ""
}

// headerDiffs says which headers event ev's row says record r must carry
// it lacks or has otherwise, "" when none.
func (m *model) headerDiffs(ev *event, r *broker.Record) string {
	var diffs []string
	headers := ev.headers()
	for _, h := range sortedKeys(headers) {
		if got, ok := r.Header(h); !ok || string(got) != headers[h] {
			diffs = append(diffs, fmt.Sprintf("header %s %s, want %q", h, showBytes(got), headers[h]))
		}
	}
	return strings.Join(diffs, "; ")
}

// wantKey is the key a record of ev must have, if topic.key names one.
func (m *model) wantKey(ev *event) (string, bool) {
	switch m.prof.Topic.Key {
	case profile.KeyAggregate:
		return ev.aggregate, ev.hasAgg
	case profile.KeyEventID:
		return ev.id, true
	}
	return "", false
}

// recs yields the indexes into m.records of ev's records, by partition
// and offset.
func (m *model) recs(ev *event) iter.Seq[int] {
	return func(yield func(int) bool) {
		for k := ev.rec; k >= 0; k = m.records[k].next {
			if !yield(int(k)) {
				return
			}
		}
	}
}
