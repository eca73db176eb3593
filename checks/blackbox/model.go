package blackbox

import (
	"path"
	"sort"
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
	// diffs are how records differ from their events' rows (record.diff).
	diffs []string
	// inbox and effect rows inserted in the window.
	inbox   chunks[sideRow]
	effects chunks[sideRow]
	// business are the transactions' business changes (commit-atomic).
	business chunks[sideRow]
	// strays are the ids side rows and records name that are no event's
	// when they are read (stray), the first "".
	strays []string
	end    time.Time
	stats  Stats
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

// build derives the model in one pass over the binlog of the window (the
// transactions of in.Scan as it reads them, or of in.Binlog); readRecords
// then reads the broker's log. An error of in.Scan is returned: the
// binlog could not be read to its end.
func build(in Input) (*model, error) {
	p := in.Profile
	m := &model{prof: p, topic: p.Topic.Name, start: in.BrokerStart,
		client: in.Client != nil, names: map[string]int32{}, strays: []string{""}}
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
	gap := func(t binlog.Transaction) { m.gap(t, last) }
	each := func(i int, t binlog.Transaction) {
		m.txs = append(m.txs, txMeta{gtid: t.GTID, file: t.File, pos: t.Pos, time: t.Time})
		if len(m.tables) == 0 || len(t.Changes) < parallelRows {
			m.rebuild(i, t)
			m.changes(i, t.Changes)
			return
		}
		// The tables (rebuild) and the events and side rows (change)
		// share nothing but t, which both only read: a large
		// transaction is filed on two cores.
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.rebuild(i, t)
		}()
		m.changes(i, t.Changes)
		<-done
	}
	holes, err := scan(in, schema, gap, each)
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

// scan runs each over the window's transactions (in.Scan's as it reads
// them, its holes returned, its error too; or in.Binlog's) cut to schema
// ("": every database), leaving out those with nothing of it; i numbers
// the ones it runs, from 0: a transaction's place in model.txs, the same
// however often the binlog is read. every, when set, sees every
// transaction first, uncut.
func scan(in Input, schema string, every func(binlog.Transaction), each func(i int, t binlog.Transaction)) ([]string, error) {
	i := 0
	fn := func(t binlog.Transaction) error {
		if every != nil {
			every(t)
		}
		if schema != "" {
			var ok bool
			if t, ok = t.ForSchema(schema); !ok {
				return nil
			}
		}
		each(i, t)
		i++
		return nil
	}
	if in.Scan != nil {
		return in.Scan(fn)
	}
	for _, t := range in.Binlog.Transactions {
		_ = fn(t) // fn returns no error of its own
	}
	return nil, nil
}

// idHint sizes the id index and the payloads' digests: about one event per record
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

// changes files the row changes of transaction i, warmRows at a time,
// each block's slots of the id index warmed first (warm).
func (m *model) changes(i int, chs []binlog.RowChange) {
	for len(chs) > 0 {
		n := min(len(chs), warmRows)
		m.warm(chs[:n])
		for _, ch := range chs[:n] {
			m.change(i, ch)
		}
		chs = chs[n:]
	}
}

// warmRows is how many row changes warm reads ahead of change.
const warmRows = 64

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
