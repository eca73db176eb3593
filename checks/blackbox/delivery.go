package blackbox

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// delivery: every committed event has a record. One without is lost when
// the relay's progress passed it (skipped if it passed before the event
// committed, acked-not-published after: commit order tells the two
// apart), pending when progress never passed it and the liveness bound
// has expired.
func (c *checker) delivery() {
	m := c.m
	c.apply(RuleLostSkipped, RuleLostAcked, RulePending)
	bound := c.in.Liveness
	if bound <= 0 {
		bound = time.Duration(m.prof.Promises.Liveness)
	}
	for ev := range m.events.each() {
		if ev.nrec > 0 {
			continue
		}
		committed := c.at(ev.tx)
		nowhere := fmt.Sprintf("no record on %s (partitions read to their ends: %s)", m.topic, c.ends())
		switch {
		case c.brokerHole:
			c.addTopic(m.reason(c.lostRule(ev), Inconclusive, ev.id, ev.tx, -1,
				"event %s, committed at %s, has %s, but the broker witness has a hole that could hold it", ev.id, committed, nowhere))
		case ev.passed >= 0 && ev.passed < ev.tx:
			c.addTopic(m.reason(RuleLostSkipped, Fail, ev.id, ev.tx, -1,
				"event %s committed at %s and has %s; the relay's progress passed it at %s, before it committed: skipped",
				ev.id, committed, nowhere, c.at(ev.passed)))
		case ev.passed >= 0:
			c.addTopic(m.reason(RuleLostAcked, Fail, ev.id, ev.passed, -1,
				"event %s committed at %s and has %s; the relay's progress passed it at %s, after it committed: acked, not published",
				ev.id, committed, nowhere, c.at(ev.passed)))
		case c.binlogHole:
			c.addTopic(m.reason(RulePending, Inconclusive, ev.id, ev.tx, -1,
				"event %s committed at %s and has %s; no progress passed it in what the binlog shows, but the binlog has a hole", ev.id, committed, nowhere))
		case c.in.Unsettled:
			c.addTopic(m.reason(RulePending, Inconclusive, ev.id, ev.tx, -1,
				"event %s committed at %s and has %s; the run was interrupted before the pipeline settled", ev.id, committed, nowhere))
		case m.end.Sub(m.txs[ev.tx].time) > bound:
			c.addTopic(m.reason(RulePending, Fail, ev.id, ev.tx, -1,
				"event %s committed at %s and has %s; the relay never passed it, and the liveness bound %v expired (%v between its commit and the end of the run)",
				ev.id, committed, nowhere, bound, m.end.Sub(m.txs[ev.tx].time).Round(time.Second)))
		default:
			c.addTopic(m.reason(RulePending, Inconclusive, ev.id, ev.tx, -1,
				"event %s committed at %s and has %s; the run ended within the liveness bound %v of its commit", ev.id, committed, nowhere, bound))
		}
	}
}

// addTopic adds a reason about a record that is not there: it names the
// topic it is missing from.
func (c *checker) addTopic(r Reason) {
	r.Topic = c.m.topic
	c.add(r)
}

// lostRule is the rule a lost event would break, for a reason that
// cannot decide (a hole): by commit order when progress passed it.
func (c *checker) lostRule(ev *event) string {
	switch {
	case ev.passed < 0:
		return RulePending
	case ev.passed < ev.tx:
		return RuleLostSkipped
	}
	return RuleLostAcked
}

// at names transaction i: "gtid 0-1-5 (binlog.000001:1234)".
func (c *checker) at(i int) string {
	g, p := c.m.where(i)
	return "gtid " + g + " (" + p + ")"
}

// ends lists the topic's partitions with their window [start, end).
func (c *checker) ends() string {
	if len(c.m.partitions) == 0 {
		return "the topic does not exist"
	}
	var parts []string
	for _, p := range c.m.partitions {
		parts = append(parts, fmt.Sprintf("%d:[%d,%d)", p.Partition, c.m.start[p.Partition], p.End))
	}
	return strings.Join(parts, " ")
}

// phantom: every record's event is a committed row. The record names the
// event; no committed transaction of the window wrote it (published
// before commit and rolled back, or made up).
func (c *checker) phantom() {
	m := c.m
	c.apply(RulePhantom)
	for k, r := range m.records {
		switch {
		case !r.hasID:
			c.add(m.reason(RulePhantom, Fail, "", -1, k, "the record carries no event id (%s)", c.locator()))
		case r.ev >= 0:
		case m.isID(m.idOf(r.ev)):
			id := m.idOf(r.ev)
			c.add(m.reason(RulePhantom, Fail, id, -1, k, "the record's event %s was committed for another topic, by its envelope", id))
		case c.binlogHole:
			id := m.idOf(r.ev)
			c.add(m.reason(RulePhantom, Inconclusive, id, -1, k, "no committed outbox row has event %s, but the binlog has a hole that could hold it", id))
		default:
			id := m.idOf(r.ev)
			c.add(m.reason(RulePhantom, Fail, id, -1, k, "no transaction of the run window committed an outbox row with event %s", id))
		}
	}
}

func (c *checker) locator() string {
	l := c.m.prof.Topic.EventID
	if l.Header != "" {
		return "header " + l.Header
	}
	return "value path " + l.Value.String()
}

// recordMismatch: a record of an event must be what the committed row
// says after decoding: its key (topic.key), its value, its headers.
func (c *checker) recordMismatch() {
	m := c.m
	c.apply(RuleRecordMismatch)
	for ev := range m.events.each() {
		if ev.decErr() != nil {
			c.add(m.reason(RuleRecordMismatch, Fail, ev.id, ev.tx, -1, "event %s: the payload column does not decode (%s): %v",
				ev.id, m.prof.Outbox.Payload.Decode, ev.decErr()))
			continue
		}
		for k := range m.recs(ev) {
			if d := m.records[k].diff; d > 0 {
				c.add(m.reason(RuleRecordMismatch, Fail, ev.id, ev.tx, k, "the record of event %s differs from its committed row: %s", ev.id, m.diffs[d-1]))
			}
		}
	}
}

func showBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) > 120 {
		return fmt.Sprintf("%q... (%d bytes)", b[:120], len(b))
	}
	return fmt.Sprintf("%q", b)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// duplicate: an event published more than once is counted and attributed
// to what the binlog shows of its row (changes before progress passed it:
// re-claims, retries); it fails only under duplicates: none.
func (c *checker) duplicate() {
	m := c.m
	c.apply(RuleDuplicate)
	for ev := range m.events.each() {
		if ev.nrec < 2 {
			continue
		}
		var offs []string
		for k := range m.recs(ev) {
			offs = append(offs, fmt.Sprintf("%d@%d", m.records[k].Partition, m.records[k].Offset))
		}
		why := fmt.Sprintf("its row changed %d time(s) before progress passed it", ev.changes)
		if ev.passed < 0 {
			why = fmt.Sprintf("its row changed %d time(s) and progress never passed it", ev.changes)
		}
		r := m.reason(RuleDuplicate, Fail, ev.id, ev.tx, int(m.records[ev.rec].next), "event %s was published %d times (partition@offset %s); %s",
			ev.id, ev.nrec, strings.Join(offs, " "), why)
		if m.prof.Promises.Duplicates == profile.DuplicatesNone {
			c.add(r)
		} else {
			r.Status = Pass
			c.notes = append(c.notes, r)
		}
	}
}

// order, under order: per-aggregate: an aggregate's records all on one
// partition (aggregate-split), and its events' first records, and first
// effects per consumer, in commit order (or sequence order).
func (c *checker) order() {
	m := c.m
	if m.prof.Promises.Order != profile.OrderPerAggregate {
		return
	}
	c.apply(RuleAggregateSplit, RuleOrder)
	// The events grouped by aggregate, the aggregates in the order of
	// their first events, each group in commit order: the events sorted
	// by a hash of their aggregate (then by the aggregate itself, which
	// tells two of one hash apart, then by commit order), 16 bytes an
	// event rather than a map of every aggregate.
	ks := make([]hashedRow, 0, m.events.len()) // k: the event
	for ev := range m.events.each() {
		if ev.hasAgg {
			ks = append(ks, hashedRow{maphash.String(aggSeed, ev.aggregate), ev.idx})
		}
	}
	agg := func(k hashedRow) string { return m.events.at(int(k.k)).aggregate }
	ks = sortByHash(ks, func(a, b hashedRow) int { // of one hash: rarely two aggregates
		return cmp.Or(strings.Compare(agg(a), agg(b)), cmp.Compare(a.k, b.k))
	})
	type run struct{ from, to int32 } // ks[from:to] are one aggregate's
	runs := make([]run, 0, len(ks))   // at most one an event
	for i := 0; i < len(ks); {
		j := i + 1
		for j < len(ks) && ks[j].h == ks[i].h && agg(ks[j]) == agg(ks[i]) {
			j++
		}
		runs = append(runs, run{int32(i), int32(j)})
		i = j
	}
	// The aggregates in the order of their first events: a run is in
	// commit order, its first event ks[from].k, so each run is placed at
	// its first event's index (no event is two runs' first), not sorted.
	byFirst := make([]int32, m.events.len()) // 1 + the run whose first event it is
	for i, r := range runs {
		byFirst[ks[r.from].k] = int32(i) + 1
	}
	consumers := c.effectConsumers()
	var evs []*event
	for _, k := range byFirst {
		if k == 0 {
			continue
		}
		r := runs[k-1]
		a := agg(ks[r.from])
		evs = evs[:0]
		for _, k := range ks[r.from:r.to] {
			evs = append(evs, m.events.at(int(k.k)))
		}
		if len(evs) > 1 {
			sort.SliceStable(evs, func(i, j int) bool { return c.before(evs[i], evs[j]) })
		}
		if split(m, evs) {
			parts := map[int32]int{}
			for _, ev := range evs {
				for k := range m.recs(ev) {
					parts[m.records[k].Partition]++
				}
			}
			first := evs[0]
			c.add(m.reason(RuleAggregateSplit, Fail, first.id, first.tx, c.firstRecord(first), "aggregate %s has records on %d partitions (%s)", a, len(parts), partList(parts)))
			continue
		}
		if len(evs) < 2 {
			continue // one event is in order with itself
		}
		c.inversions(a, evs, "first record", func(ev *event) (int64, int, bool) {
			k := c.firstRecord(ev)
			if k < 0 {
				return 0, -1, false
			}
			return m.records[k].Offset, k, true
		})
		for _, cons := range consumers {
			c.inversions(a, evs, cons.label, func(ev *event) (int64, int, bool) {
				tx, ok := c.firstEffect(ev, cons.name)
				return int64(tx), -1, ok
			})
		}
	}
}

// aggSeed seeds the hash order groups events by.
var aggSeed = maphash.MakeSeed()

// split reports whether the records of evs are on more than one
// partition.
func split(m *model, evs []*event) bool {
	p := int32(-1)
	for _, ev := range evs {
		for k := range m.recs(ev) {
			switch q := m.records[k].Partition; {
			case p < 0:
				p = q
			case q != p:
				return true
			}
		}
	}
	return false
}

// inversions reports each event of evs (in promised order) whose first
// delivery, as pos gives it, comes before that of an event promised
// earlier.
func (c *checker) inversions(agg string, evs []*event, what string, pos func(*event) (int64, int, bool)) {
	m := c.m
	var high int64 = -1
	var highEv *event
	for _, ev := range evs {
		p, rec, ok := pos(ev)
		if !ok {
			continue
		}
		if highEv != nil && p < high {
			st := Fail
			if c.brokerHole && rec >= 0 {
				st = Inconclusive
			}
			tx := ev.tx
			if rec < 0 {
				tx = int(p)
			}
			c.add(m.reason(RuleOrder, st, ev.id, tx, rec, "aggregate %s: the %s of event %s (committed at %s) comes before that of event %s (committed at %s), which was promised first",
				agg, what, ev.id, c.at(ev.tx), highEv.id, c.at(highEv.tx)))
			continue
		}
		high, highEv = p, ev
	}
}

// before orders two events of one aggregate as promised: by sequence when
// the profile names one (numerically when both are numbers), else by
// commit order.
func (c *checker) before(a, b *event) bool {
	as, aok := a.seq()
	bs, bok := b.seq()
	if aok && bok {
		x, y := profile.Number(as), profile.Number(bs)
		if x != nil && y != nil {
			if d := x.Cmp(y); d != 0 {
				return d < 0
			}
		} else {
			sa, _ := profile.Text(as)
			sb, _ := profile.Text(bs)
			if sa != sb {
				return sa < sb
			}
		}
	}
	return a.tx < b.tx
}

func (c *checker) firstRecord(ev *event) int {
	best := -1
	for k := range c.m.recs(ev) {
		if best < 0 || c.m.records[k].Offset < c.m.records[best].Offset {
			best = k
		}
	}
	return best
}

// consumerLabel is a consumer of an effect that names its event, with
// the words the order rule says its first effects by.
type consumerLabel struct{ name, label string }

// effectConsumers are the consumers of the effects that name their
// event, sorted.
func (c *checker) effectConsumers() []consumerLabel {
	seen := map[string]bool{}
	var out []consumerLabel
	for e := range c.m.effects.each() {
		if cons := c.m.consumer(e); e.hasEvent && !seen[cons] {
			seen[cons] = true
			out = append(out, consumerLabel{cons, "first effect of consumer " + cons})
		}
	}
	slices.SortFunc(out, func(a, b consumerLabel) int { return strings.Compare(a.name, b.name) })
	return out
}

// firstEffect is the transaction of ev's first effect by consumer cons
// (an effect that names its event).
func (c *checker) firstEffect(ev *event, cons string) (int, bool) {
	x := c.effectIndex()
	for k := x.head[ev.idx]; k >= 0; k = x.next[k] {
		if e := c.m.effects.at(k); e.hasEvent && c.m.consumer(e) == cons {
			return int(e.tx), true
		}
	}
	return 0, false
}

func partList(parts map[int32]int) string {
	var ps []int
	for p := range parts {
		ps = append(ps, int(p))
	}
	sort.Ints(ps)
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d: %d record(s)", p, parts[int32(p)]))
	}
	return strings.Join(out, ", ")
}

// lag: after settling, every selected group has committed the end offset
// of every partition that has records in the window.
func (c *checker) lag() {
	m := c.m
	if c.in.Broker == nil {
		return
	}
	c.apply(RuleLag)
	// A run interrupted before it settled leaves lag behind: no finding.
	st, why := Fail, "not consumed after settling"
	if c.in.Unsettled {
		st, why = Inconclusive, "not consumed when the run was interrupted, before the pipeline settled"
	}
	var groups []string
	for g, topics := range c.in.Broker.Groups {
		if _, ok := topics[m.topic]; ok && m.groupMatch(g) {
			groups = append(groups, g)
		}
	}
	sort.Strings(groups)
	if len(groups) == 0 {
		if len(m.records) > 0 && len(m.prof.Topic.Groups) > 0 {
			c.add(Reason{Rule: RuleLag, Status: st, Topic: m.topic, Partition: -1, Offset: -1,
				Message: fmt.Sprintf("no consumer group matching %s committed an offset on the topic, which has %d record(s)", strings.Join(m.prof.Topic.Groups, ", "), len(m.records))})
		}
		return
	}
	for _, g := range groups {
		for _, p := range m.partitions {
			if p.End <= m.start[p.Partition] {
				continue
			}
			got, ok := c.in.Broker.Committed(g, m.topic, p.Partition)
			if !ok {
				got = -1
			}
			if got < p.End {
				c.add(Reason{Rule: RuleLag, Status: st, Topic: m.topic, Partition: p.Partition, Offset: got,
					Message: fmt.Sprintf("group %s committed offset %s of partition %d, below its end offset %d: %d record(s) %s",
						g, committedText(got, ok), p.Partition, p.End, p.End-max(got, m.start[p.Partition]), why)})
			}
		}
	}
}

func committedText(o int64, ok bool) string {
	if !ok {
		return "none"
	}
	return itoa(o)
}

// progress: the relay's progress never moves back.
func (c *checker) progress() {
	m := c.m
	c.apply(RuleProgress)
	for _, b := range m.back {
		c.add(m.reason(RuleProgress, Fail, b.event, b.tx, -1, "%s", b.message))
	}
}
