package blackbox

import (
	"slices"
	"sort"
	"strings"
)

// holes finds the gaps in the witnesses (rule holes) and remembers which
// witness has one: a rule that would FAIL on the absence of something a
// hole could hide says INCONCLUSIVE instead (never PASS on a holed
// witness, never a false FAIL).
//
//   - binlog: a GTID sequence gap in a replication domain within the
//     window (a transaction is missing), or a hole a reader reported
//     (Input.Holes): a row, a progress write or an effect may be in it;
//   - broker: no broker witness; a partition whose log start is past the
//     window's start (records deleted by retention or by hand); offsets
//     missing inside a partition that are not transaction markers
//     (compaction): a record may have been there.
func (c *checker) holes() {
	c.apply(RuleHoles)
	m := c.m
	c.binlogHole = m.binlogHoled(c.in) // as the invariants' checker has it
	for _, g := range m.gaps {
		c.add(g)
	}
	for _, h := range append(slices.Clip(c.in.Holes), m.holes...) {
		c.add(Reason{Rule: RuleHoles, Status: Inconclusive, Partition: -1, Offset: -1, Message: h})
	}
	if c.in.Broker == nil {
		c.brokerHole = true
		c.add(Reason{Rule: RuleHoles, Status: Inconclusive, Topic: m.topic, Partition: -1, Offset: -1,
			Message: "no broker witness: what was published cannot be seen"})
		return
	}
	for _, p := range m.partitions {
		from := m.start[p.Partition]
		control := map[int64]bool{}
		for _, o := range p.ControlOffsets {
			control[o] = true
		}
		next := from
		if p.Start > from {
			c.brokerHole = true
			c.add(Reason{Rule: RuleHoles, Status: Inconclusive, Topic: p.Topic, Partition: p.Partition, Offset: from,
				Message: sprintf("the partition's log starts at offset %d, past the run window's start %d: records %d..%d were deleted and could be any event's", p.Start, from, from, p.Start-1)})
			next = p.Start
		}
		var missing []string
		gap := func(a, b int64) { // offsets [a, b) absent: a hole unless all are markers
			for o := a; o < b; o++ {
				if !control[o] {
					missing = append(missing, itoa(a)+".."+itoa(b-1))
					return
				}
			}
		}
		// m.records are by partition and offset, from the window's start
		k := sort.Search(len(m.records), func(k int) bool { return m.records[k].Partition >= p.Partition })
		for ; k < len(m.records) && m.records[k].Partition == p.Partition; k++ {
			if o := m.records[k].Offset; o >= next {
				gap(next, o)
				next = o + 1
			}
		}
		gap(next, p.End)
		if len(missing) > 0 {
			c.brokerHole = true
			c.add(Reason{Rule: RuleHoles, Status: Inconclusive, Topic: p.Topic, Partition: p.Partition, Offset: -1,
				Message: "offsets " + strings.Join(missing, ", ") + " hold no record and no transaction marker (compacted or deleted): they could be any event's"})
		}
	}
}

// binlogHoled reports whether the binlog of the window has a hole (rule
// holes): a GTID gap, or a hole a reader reported.
func (m *model) binlogHoled(in Input) bool {
	return len(m.gaps) > 0 || len(in.Holes) > 0 || len(m.holes) > 0
}
