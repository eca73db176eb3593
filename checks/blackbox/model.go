package blackbox

import (
	"bytes"
	"fmt"
	"iter"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// model is what the rules read, derived once from the witnesses.
type model struct {
	prof  *profile.Profile
	topic string
	// schema is the database the transactions were cut to ("": none).
	schema string
	// txs are the window's transactions cut to the audited database, in
	// commit order: an index into txs is a position in commit order. Only
	// where and when each is kept: the row changes are read once, as the
	// binlog streams (build), not held.
	txs []txMeta
	// gaps are the binlog's GTID sequence gaps in the window (rule holes);
	// holes those Input.Scan found, after Input.Holes.
	gaps  []Reason
	holes []string
	// tables are the tables the invariants' anti-joins name, rebuilt from
	// the row changes as they stream (invariants.go); joins the parsed
	// anti-joins, nil where one could not be read (joinErrs says why).
	tables   map[string]*table
	joins    []*profile.AntiJoin
	joinErrs []Reason
	// events are the committed outbox rows for the topic, in commit order
	// (kept by value, in blocks: see chunks); ids finds one by its id
	// (the first row, when a buggy service wrote an id twice: the rest
	// are in dupRows). ids also holds the id of every committed outbox
	// row of another topic, of no event: an effect of an event routed
	// elsewhere is not an orphan (isID).
	events  chunks[event]
	ids     ids
	dupRows []*event
	// ar keeps the texts and bytes the model keeps (arena.go); tar the
	// rebuilt tables' rows, apart, so that rebuild can run beside change
	// (build).
	ar, tar arena
	// values digest the events' payloads, as their rows say their records
	// must be (decoded; valueHash), by event index, until readBroker has
	// compared every record with them.
	values [][2]uint64
	// cursor (progress kind cursor) is every write of the cursor row.
	cursor []cursorWrite
	// back are progress changes that move back (the progress rule).
	back []progressBack
	// partitions are the topic's partitions; start the run window's first
	// offset of each; records each record in the window.
	partitions []broker.Partition
	start      map[int32]int64
	records    []record
	// diffs are how records differ from their events' rows (record.diff);
	// recIDs the ids records carry that are no event's (record.ev).
	diffs  []string
	recIDs []string
	// inbox and effect rows inserted in the window.
	inbox   chunks[sideRow]
	effects chunks[sideRow]
	// business are the transactions' business changes (commit-atomic).
	business chunks[sideRow]
	// sideIDs are the ids side rows name that are no event's when the
	// row is read (sideRow.ev), the first "".
	sideIDs []string
	end     time.Time
	stats   Stats
	// consumers are the consumer names of the side rows, each kept once
	// (side); names finds one's index.
	consumers []string
	names     map[string]int32
	// lastSide and lastCons are the event and consumer the last side row
	// named (side), looked up again only when the next names others.
	lastSide *event
	lastCons int32
	// client: the input has the load client's history (the answer rule
	// runs, and an event's correlation token is read).
	client bool
}

// txMeta is what the rules keep of a transaction: where it is in the
// binlog and when it began.
type txMeta struct {
	gtid binlog.GTID
	file string
	pos  uint32
	time time.Time
}

type cursorWrite struct {
	tx    int
	value num
}

type progressBack struct {
	tx      int
	event   string
	message string
}

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
	// model.events), else -1 - the index into model.recIDs of the id.
	ev    int32
	hasID bool
}

// build derives the model in one pass over the binlog of the window (the
// transactions of in.Scan as it reads them, or of in.Binlog); readRecords
// then reads the broker's log. An error of in.Scan is returned: the
// binlog could not be read to its end.
func build(in Input) (*model, error) {
	p := in.Profile
	m := &model{prof: p, topic: p.Topic.Name, start: in.BrokerStart,
		client: in.Client != nil, names: map[string]int32{}, sideIDs: []string{""}}
	if in.Topic != "" {
		m.topic = in.Topic
	}
	hint := idHint(in.Broker, m.topic)
	m.ids.sized(hint)
	m.values = make([][2]uint64, 0, hint)
	schema := in.Schema
	if schema == "" {
		schema = p.Database.Schema
	}
	m.prepareTables()
	last := map[uint32]uint64{} // the GTID sequence per domain, for gaps
	each := func(t binlog.Transaction) error {
		m.gap(t, last)
		if schema != "" {
			var ok bool
			if t, ok = t.ForSchema(schema); !ok {
				return nil
			}
		}
		i := len(m.txs)
		m.txs = append(m.txs, txMeta{gtid: t.GTID, file: t.File, pos: t.Pos, time: t.Time})
		if len(m.tables) == 0 || len(t.Changes) < parallelRows {
			m.rebuild(i, t)
			for _, ch := range t.Changes {
				m.change(i, ch)
			}
			return nil
		}
		// The tables (rebuild) and the events and side rows (change)
		// share nothing but t, which both only read: a large
		// transaction is filed on two cores.
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.rebuild(i, t)
		}()
		for _, ch := range t.Changes {
			m.change(i, ch)
		}
		<-done
		return nil
	}
	holes, err := scan(in, each)
	if err != nil {
		return nil, err
	}
	m.holes = holes
	m.schema = schema
	m.cursorPasses()
	m.end = in.End
	if m.end.IsZero() && len(m.txs) > 0 {
		m.end = m.txs[len(m.txs)-1].time
	}
	m.stats.Events = m.events.len()
	m.stats.Effects = m.effects.len()
	return m, nil
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
		if err := m.compareValues(in, m.schema, unsure); err != nil {
			return err
		}
	}
	m.stats.Records = len(m.records)
	return nil
}

// scan runs each over the window's transactions: in.Scan's as it reads
// them (its holes returned, its error too), or in.Binlog's.
func scan(in Input, each func(binlog.Transaction) error) ([]string, error) {
	if in.Scan != nil {
		return in.Scan(each)
	}
	for _, t := range in.Binlog.Transactions {
		if err := each(t); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// idHint sizes the id index and the payloads: about one event per record
// of the topic, as the broker's log counts them (checked already, so a
// count whose memory is spent), so that a million ids are not rehashed
// as the index grows. At most maxIDHint: past it they grow.
func idHint(log *broker.Log, topic string) int {
	if log == nil {
		return 0
	}
	n := 0
	for i := range log.Topics[topic] {
		n += log.Topics[topic][i].Count()
	}
	return min(n, maxIDHint)
}

const maxIDHint = 1 << 22

// parallelRows is the size from which a transaction's rebuild runs on a
// goroutine of its own (below it, starting one costs more than it saves).
var parallelRows = 256

// gap files a GTID sequence gap before t in its replication domain (last
// holds each domain's last sequence): a transaction is missing from the
// window, which could hold an outbox row, a progress write or an effect.
func (m *model) gap(t binlog.Transaction, last map[uint32]uint64) {
	g := t.GTID
	if prev, ok := last[g.Domain]; ok && g.Seq != prev+1 {
		m.gaps = append(m.gaps, Reason{Rule: RuleHoles, Status: Inconclusive, GTID: g.String(), Binlog: t.File + ":" + itoa(int64(t.Pos)),
			Partition: -1, Offset: -1, Message: sprintf("the binlog skips from %d-%d-%d to %s: %d transaction(s) missing, which could hold an outbox row, a progress write or an effect",
				g.Domain, g.Server, prev, g, g.Seq-prev-1)})
	}
	if !g.IsZero() {
		last[g.Domain] = g.Seq
	}
}

// change files one row change of transaction i.
func (m *model) change(i int, ch binlog.RowChange) {
	p := m.prof
	switch ch.Table {
	case p.Outbox.Table:
		m.outboxChange(i, ch)
	case p.Outbox.Progress.Table:
		if p.Outbox.Progress.Kind == profile.ProgressCursor {
			m.cursorChange(i, ch)
		}
	}
	if p.Business != nil && ch.Table == p.Business.Table {
		for _, op := range p.Business.Ops {
			if string(ch.Op) == op {
				m.business.add(m.side(i, ch, p.Business.EventID, nil))
			}
		}
	}
	if ch.Op != binlog.Insert {
		return
	}
	if p.Inbox != nil && ch.Table == p.Inbox.Table {
		m.inbox.add(m.side(i, ch, &p.Inbox.EventID, p.Inbox.Consumer))
	}
	if p.Effect != nil && ch.Table == p.Effect.Table {
		m.effects.add(m.side(i, ch, &p.Effect.EventID, p.Effect.Consumer))
	}
}

// own: a text the model keeps is copied out of the row it was read
// from. The binlog reader's strings may share the bytes of their rows
// event (go-mysql decodes without copying), and one kept string would
// keep the whole event: at a million events, the binlog over again.

func text(v any, ok bool) (string, bool) {
	if !ok {
		return "", false
	}
	return profile.Text(v)
}

// cursorChange files a write of the cursor row (its Match columns equal).
func (m *model) cursorChange(i int, ch binlog.RowChange) {
	pr := m.prof.Outbox.Progress
	if ch.Op == binlog.Delete {
		return
	}
	for col, want := range pr.Match {
		if got, ok := profile.Text(ch.After[col]); !ok || got != string(want) {
			return
		}
	}
	v := toNum(ch.After[pr.Column])
	if !v.set {
		return
	}
	if n := len(m.cursor); n > 0 && v.cmp(m.cursor[n-1].value) < 0 {
		m.back = append(m.back, progressBack{tx: i,
			message: "the cursor " + pr.Table + "." + pr.Column + " moved back from " + m.cursor[n-1].value.String() + " to " + v.String()})
	}
	m.cursor = append(m.cursor, cursorWrite{tx: i, value: v})
}

// cursorPasses sets, for the cursor kind, where the cursor first reached
// each event's position: the first write at least its against value,
// before or after the event committed (before is a skip).
func (m *model) cursorPasses() {
	if m.prof.Outbox.Progress.Kind != profile.ProgressCursor || len(m.cursor) == 0 {
		return
	}
	// high[k] is the highest value among the first k+1 writes: monotone,
	// so the first write to reach a value is found by binary search.
	high := make([]num, len(m.cursor))
	for k, w := range m.cursor {
		high[k] = w.value
		if k > 0 && high[k-1].cmp(w.value) > 0 {
			high[k] = high[k-1]
		}
	}
	for ev := range m.events.each() {
		if !ev.against.set {
			continue
		}
		k := sort.Search(len(high), func(k int) bool { return high[k].cmp(ev.against) >= 0 })
		if k < len(high) {
			ev.passed = m.cursor[k].tx
		}
	}
}

// number reads an integer or decimal value (a row's or a JSON value).

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
	err := log.EachRecord(m.topic, func(r *broker.Record) error {
		if r.Offset < m.start[r.Partition] {
			return nil
		}
		rec := record{Partition: r.Partition, Offset: r.Offset, next: -1}
		var ev *event
		if loc.Header != "" {
			if v, ok := r.Header(loc.Header); ok && v != nil {
				rec.hasID = true
				if ev = m.eventByBytes(v); ev == nil {
					rec.ev = -1 - int32(len(m.recIDs))
					m.recIDs = append(m.recIDs, m.ar.strOf(v))
				}
			}
		} else if loc.Value != nil {
			var id string
			if id, rec.hasID = text(profile.LookupPath(r.Value, loc.Value.Path)); rec.hasID {
				if ev = m.eventByID(id); ev == nil {
					rec.ev = -1 - int32(len(m.recIDs))
					m.recIDs = append(m.recIDs, m.ar.str(id)) // see own
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
		return nil
	})
	return out, err
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
// payloads, read again from the binlog (in, cut to schema as build cut
// it): equal bytes or the same JSON document (sameValue), else the
// record differs. The binlog is read again only when a value's digest
// differed, which a relay that publishes what it read never makes.
func (m *model) compareValues(in Input, schema string, unsure []unsure) error {
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
	i := -1
	_, err := scan(in, func(t binlog.Transaction) error {
		if schema != "" {
			var ok bool
			if t, ok = t.ForSchema(schema); !ok {
				return nil
			}
		}
		i++
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
					dec, _ := decode(nil, o.Payload.Decode, ch.After[o.Payload.Column])
					want[ev] = bytes.Clone(dec.value)
					evs = slices.Delete(evs, j, j+1)
					break
				}
			}
		}
		return nil
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

// where locates transaction i for a reason.
func (m *model) where(i int) (gtid, pos string) {
	if i < 0 || i >= len(m.txs) {
		return "", ""
	}
	t := m.txs[i]
	return t.gtid.String(), t.file + ":" + itoa(int64(t.pos))
}

// reason builds a reason on transaction tx (or -1) and record rec (or -1).
func (m *model) reason(rule string, st Status, ev string, tx, rec int, format string, args ...any) Reason {
	r := Reason{Rule: rule, Status: st, Event: ev, Partition: -1, Offset: -1, Message: sprintf(format, args...)}
	r.GTID, r.Binlog = m.where(tx)
	if rec >= 0 {
		rr := m.records[rec]
		r.Topic, r.Partition, r.Offset = m.topic, rr.Partition, rr.Offset
	}
	return r
}

// groupMatch reports whether group is one of the profile's groups (a
// trailing * is a prefix; with no groups listed, every group matches).
func (m *model) groupMatch(group string) bool {
	if len(m.prof.Topic.Groups) == 0 {
		return true
	}
	for _, g := range m.prof.Topic.Groups {
		if ok, _ := path.Match(g, group); ok {
			return true
		}
	}
	return false
}
