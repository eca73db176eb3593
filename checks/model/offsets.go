package model

import (
	"cmp"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Consumer-group offsets (delivery layer), per group and partition: a
// commit never goes backwards (offset-backwards), never passes a record
// the group did not receive (offset-skips-record; one it received but did
// not settle is offset-before-effect), and after settling record n is n+1
// (offset-off-by-one); at the end every group has committed each
// partition of the topics it consumed up to the partition's end
// (offset-lag), and every member committed what it settled, unless it
// crashed (settled-not-committed). Off-by-one is judged on a member's
// last commit, the one a restart resumes from: a consumer that settles
// several records and then commits each in turn commits n on its way.

// consumerState is what the consumer-side rules keep beyond the records
// and the inbox.
type consumerState struct {
	gparts      map[partKey]*groupPart
	gpartOrder  []partKey
	members     map[memberKey]*memberPart
	memberOrder []memberKey
	cur         map[string]current  // actor -> its record in hand
	partEnd     map[topicPart]int64 // a partition's end offset as far as the history knows
	recvVersion map[aggKey]int64    // group+aggregate -> highest version received (above 1 only)
	effVersion  map[aggKey]int64    // inbox consumer+aggregate -> highest version applied (above 1 only)
	crashed     map[string]bool     // actors with a fault event in their own log
	faultCommit map[string]int64    // fault point -> the committed offset of its event's pending record then
	orderParts  []orderPart         // by order index (m.orders), grown on use
	skipScanned int64

	lag, splitAggregates, effectsOutOfOrder, partitions int64
	receivesOutOfVersion                                int64
	rolledBackEffects, unknownCommits, resolvedCommits  int64
	// decidedCommits are the commit_unknown events a later inbox_insert
	// (they did not commit) or inbox_reject (the last of them did) of
	// their row settled.
	decidedCommits int64
}

// topicPart is one partition of a topic.
type topicPart struct {
	topic     string
	partition int32
}

// groupPart is what one group did on one partition.
type groupPart struct {
	committed, maxRecv int64
	hasCommit, hasRecv bool
	checked            int64  // offsets below it were checked for skips
	lastSrc            Source // the group's last receive or commit there
}

// memberKey is one member (actor) on one partition.
type memberKey struct {
	actor string
	topicPart
}

// memberPart is what one member did on one partition: the offset of its
// last receive, and the highest record it settled that none of its
// commits has covered yet (-1: none).
type memberPart struct {
	firstRecv  int64
	lastRecv   int64
	hasRecv    bool
	lastCommit int64 // -1: none
	commitSrc  Source
	lastSettle int64 // the offset of its latest settle (-1: none)
	settleThen int64 // lastSettle when it made its last commit

	settled    int64
	settledSrc Source
	settledID  string
}

// current is a member's record in hand: the one it received last.
type current struct {
	rec     recordKey
	eventID string
	group   string // the group it received the record in
	ok      bool
}

// skipScanPerEvent is the offset look-ups each event buys for the
// offset-skips-record check: a commit that jumps far beyond what the
// history holds cannot make the replay quadratic.
const skipScanPerEvent = 8

// groupPartOf returns the state of a group on a partition, creating it.
func (m *Model) groupPartOf(group, topic string, partition int32) *groupPart {
	k := partKey{group, topic, partition}
	gp := m.gparts[k]
	if gp == nil {
		gp = &groupPart{}
		m.gparts[k] = gp
		m.gpartOrder = append(m.gpartOrder, k)
	}
	return gp
}

// memberPartOf returns the state of a member on a partition, creating it.
func (m *Model) memberPartOf(actor, topic string, partition int32) *memberPart {
	k := memberKey{actor, topicPart{topic, partition}}
	mp := m.members[k]
	if mp == nil {
		mp = &memberPart{settled: -1, lastCommit: -1, lastSettle: -1, settleThen: -1}
		m.members[k] = mp
		m.memberOrder = append(m.memberOrder, k)
	}
	return mp
}

// knownRecord notes a record's offset for the partition's end offset.
func (m *Model) knownRecord(k recordKey) {
	tp := topicPart{k.topic, k.partition}
	end, ok := m.partEnd[tp]
	if !ok {
		m.partitions++
	}
	if !ok || k.offset+1 > end {
		m.partEnd[tp] = k.offset + 1
	}
}

// settle notes that member actor settled record k (an effect or an
// inbox_reject): one of its later commits must cover it.
func (m *Model) settle(actor string, k recordKey, eventID string, src Source) {
	mp := m.memberPartOf(m.intern(actor), k.topic, k.partition)
	if k.offset > mp.settled {
		mp.settled, mp.settledSrc, mp.settledID = k.offset, src, m.ev(eventID).id
	}
	mp.lastSettle = k.offset
}

// commitOffsets checks an offset_commit of next by actor for group on a
// partition against what the group and the member did before it.
func (m *Model) commitOffsets(actor, group, topic string, partition int32, next int64, src Source) {
	gp := m.groupPartOf(group, topic, partition)
	if gp.hasCommit && next < gp.committed {
		m.violate(RuleOffsetBackwards, src, "", "group %s committed offset %d of %s/%d after offset %d: commits never go backwards",
			group, next, topic, partition, gp.committed)
	}
	mp := m.memberPartOf(m.intern(actor), topic, partition)
	if next > mp.settled {
		mp.settled = -1
	}
	mp.lastCommit, mp.commitSrc, mp.settleThen = next, src, mp.lastSettle
	m.skippedRecords(gp, group, topic, partition, next, src)
	gp.committed, gp.hasCommit, gp.lastSrc = next, true, src
}

// skippedRecords: a commit of next passes every record below it; each
// record of the partition the history knows at or past the last offset
// checked must have been received by the group (offset-skips-record).
func (m *Model) skippedRecords(gp *groupPart, group, topic string, partition int32, next int64, src Source) {
	if next <= gp.checked {
		return
	}
	gi := slices.Index(m.groups, group)
	budget := skipScanPerEvent*m.events + 4096 - m.skipScanned
	if gi < 0 || next-gp.checked > budget {
		gp.checked = next
		return
	}
	for off := gp.checked; off < next; off++ {
		r, ok := m.records[recordKey{topic, partition, off}]
		if ok && r.groups&(1<<gi) == 0 {
			id := ""
			if es := cmp.Or(r.pub, r.rec); es != nil {
				id = es.id
			}
			m.violate(RuleOffsetSkipsRecord, src, id,
				"group %s committed offset %d of %s/%d, passing the record at offset %d (%s), which it never received",
				group, next, topic, partition, off, id)
		}
	}
	m.skipScanned += next - gp.checked
	gp.checked = next
}

// checkOffsets (end of scenario): every group that committed on a topic
// committed, on every partition of it, the partition's end offset
// (offset-lag; a member that never commits is settled-not-committed); every member that did not crash committed past every
// record it settled (settled-not-committed).
func (m *Model) checkOffsets(truncated bool) {
	consumed := map[partKey]*groupPart{} // group+topic (partition -1) -> a part with its last source
	for _, k := range m.gpartOrder {
		if gp := m.gparts[k]; gp.hasRecv && gp.hasCommit {
			consumed[partKey{k.group, k.topic, -1}] = gp
		}
	}
	parts := make([]topicPart, 0, len(m.partEnd))
	for tp := range m.partEnd {
		parts = append(parts, tp)
	}
	slices.SortFunc(parts, func(a, b topicPart) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	for _, g := range m.groups {
		for _, tp := range parts {
			some := consumed[partKey{g, tp.topic, -1}]
			if some == nil {
				continue
			}
			var committed int64
			src := some.lastSrc
			if gp := m.gparts[partKey{g, tp.topic, tp.partition}]; gp != nil && gp.hasCommit {
				committed, src = gp.committed, gp.lastSrc
			}
			if end := m.partEnd[tp]; committed < end {
				m.lag += end - committed
				m.report(truncated, RuleOffsetLag, src, "", "group %s ended at offset %d of %s/%d, whose end offset is %d: a lag of %d",
					g, committed, tp.topic, tp.partition, end, end-committed)
			}
		}
	}
	for _, k := range m.memberOrder {
		mp := m.members[k]
		if mp.lastCommit >= 0 && mp.lastCommit == mp.settleThen {
			m.report(truncated, RuleOffsetOffByOne, mp.commitSrc, "",
				"%s last committed offset %d of %s/%d, the offset of the last record it settled: the next offset to read is %d",
				k.actor, mp.lastCommit, k.topic, k.partition, mp.lastCommit+1)
			continue
		}
		if mp.settled < 0 || m.crashed[k.actor] {
			continue
		}
		m.report(truncated, RuleSettledNotCommitted, mp.settledSrc, mp.settledID,
			"%s settled the record at %s/%d@%d (%s) and never committed an offset past it (its log ends without a crash)",
			k.actor, k.topic, k.partition, mp.settled, mp.settledID)
	}
}

// memberReceived notes a member's receive of record k: its record in
// hand, and its last and first receive on the partition.
func (m *Model) memberReceived(actor, group string, es *eventState, k recordKey) {
	actor = m.intern(actor)
	mp := m.memberPartOf(actor, k.topic, k.partition)
	if !mp.hasRecv {
		mp.firstRecv = k.offset
	}
	mp.lastRecv, mp.hasRecv = k.offset, true
	m.cur[actor] = current{rec: k, eventID: es.id, group: group, ok: true}
}

// inboxHas tells whether inbox row k exists; an open unknown commit of k
// is taken to have committed it (a replay's inbox_reject shows it did).
func (m *Model) inboxHas(k inboxKey) bool {
	if _, ok := m.inbox[k]; ok {
		// The row is known to exist (logged, or an unlogged insert the
		// binlog showed, resolvetx.go); a decision on it settles the
		// unknown commits still open on it all the same.
		m.decidedCommits += int64(m.openCommits[k])
		delete(m.openCommits, k)
		return true
	}
	if m.openCommits[k] == 0 {
		return false
	}
	// The last of them committed, the earlier ones did not (a committed
	// row would have made the next attempt an inbox_reject).
	m.decidedCommits += int64(m.openCommits[k])
	delete(m.openCommits, k)
	m.inbox[k] = struct{}{}
	m.inboxOrder = append(m.inboxOrder, k)
	m.resolvedCommits++
	return true
}

// commitAtFault notes, for the first fault of a point that names an event
// id with a received record not yet settled, the offset the group that
// received it had committed on its partition then (0 before any commit).
func (m *Model) commitAtFault(e *evidence.Event) {
	es := m.byID[e.EventID]
	if es == nil || len(es.pending) == 0 || len(m.faultCommit) >= maxFaults {
		return
	}
	if _, ok := m.faultCommit[e.Point]; ok {
		return
	}
	pk := es.pending[0]
	var committed int64
	if gp := m.gparts[partKey{pk.group, pk.rec.topic, pk.rec.partition}]; gp != nil && gp.hasCommit {
		committed = gp.committed
	}
	m.faultCommit[strings.Clone(e.Point)] = committed
}

// CommittedAtFault returns the offset committed, when the first fault at
// point was recorded, by the group that held its event's record unsettled,
// on that record's partition; ok is false when no such fault was recorded.
func (m *Model) CommittedAtFault(point string) (int64, bool) {
	n, ok := m.faultCommit[point]
	return n, ok
}

// MemberPartition is what one member (actor) did on one partition: the
// offset of its first receive and its last commit (-1: none).
type MemberPartition struct {
	Topic         string
	Partition     int32
	FirstReceived int64
	LastCommitted int64
}

// Member returns what actor did on each partition it received from or
// committed on, in the order first seen.
func (m *Model) Member(actor string) []MemberPartition {
	var out []MemberPartition
	for _, k := range m.memberOrder {
		if k.actor != actor {
			continue
		}
		mp := m.members[k]
		first := int64(-1)
		if mp.hasRecv {
			first = mp.firstRecv
		}
		out = append(out, MemberPartition{Topic: k.topic, Partition: k.partition, FirstReceived: first, LastCommitted: mp.lastCommit})
	}
	return out
}
