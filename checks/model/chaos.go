package model

import (
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// What the chaos scenario's derivation reads (checks/derive_chaos.go):
// the nemesis's faults by kind (uncapped, unlike Faults), the groups'
// last committed offsets and the partitions' ends (for the lag), and the
// publishes of unknown outcome the received records resolve. The figures
// that come from the records are taken in Finish, before Release drops
// the records.

// chaosState is the Model's part for the chaos figures.
type chaosState struct {
	faultKinds map[string]int    // nemesis fault events by kind
	commits    map[partKey]int64 // last committed offset (the next to read)
	ends       map[partKey]int64 // per topic/partition (group ""): last offset seen + 1
	unknown    int64             // publish_unknown events
	resolved   int64             // of those, resolved by the records received
}

// countFault counts a nemesis fault event by its kind.
func (m *Model) countFault(e *evidence.Event) {
	k, ok := strings.CutPrefix(e.Point, spec.NemesisPrefix)
	if !ok {
		return
	}
	if m.faultKinds == nil {
		m.faultKinds = map[string]int{}
	}
	m.faultKinds[k]++
}

// stepHeal: the nemesis ended a fault; its point must be declared, as a
// fault's (fault-undeclared).
func (m *Model) stepHeal(e *evidence.Event, src Source) {
	if !m.faultPoints[e.Point] {
		m.violate(RuleFaultUndeclared, src, e.EventID, "a fault was healed at %q, which the scenario does not declare", e.Point)
	}
	m.noteWindow(e) // ownership.go
}

// stepProcess: the supervisor started an actor process or saw it end. The
// outbox, the broker and the inbox are not touched; what the process did
// is in its own log. A process that did not end cleanly ("exit 0": its
// stop at the end of the scenario) died in the middle of its work, as a
// crash does: what it left unfinished (an offset it did not commit) is
// not held against it (settled-not-committed).
func (m *Model) stepProcess(e *evidence.Event, _ Source) {
	m.noteExit(e)
	m.releaseProcess(e) // ownership.go
	if e.Kind == evidence.KindProcessExit && e.Detail != "exit 0" && e.Target != "" {
		m.crashed[m.intern(e.Target)] = true
	}
}

// noteCommit keeps a group's last committed offset of a partition.
func (m *Model) noteCommit(e *evidence.Event) {
	if m.commits == nil {
		m.commits = map[partKey]int64{}
	}
	m.commits[partKey{m.intern(e.Consumer), m.intern(e.Topic), val(e.Partition)}] = val(e.Offset)
}

// finishChaos takes the figures that come from the records.
func (m *Model) finishChaos() {
	m.ends = map[partKey]int64{}
	extra := map[*eventState]int64{}
	for k, r := range m.records {
		pk := partKey{"", k.topic, k.partition}
		m.ends[pk] = max(m.ends[pk], k.offset+1)
		if r.rec != nil && !r.publishd {
			extra[r.rec]++
		}
	}
	for _, es := range m.rows {
		var u int64
		for _, t := range es.tokens {
			if t.Unknown {
				u++
			}
		}
		m.unknown += u
		// Each record of the event that no acknowledged publish produced
		// was appended by one of its unknown publishes: with no more such
		// records than unknown publishes, every outcome is settled (those
		// appended, the rest not).
		if u > 0 && extra[es] <= u {
			m.resolved += u
		}
	}
}

// FaultKinds returns the nemesis's fault events by kind (the point without
// spec.NemesisPrefix).
func (m *Model) FaultKinds() map[string]int {
	out := make(map[string]int, len(m.faultKinds))
	for k, v := range m.faultKinds {
		out[k] = v
	}
	return out
}

// Lag returns, summed over the partitions of every topic a record was
// seen on, the end (last offset seen + 1) minus group's last committed
// offset (0 without a commit).
func (m *Model) Lag(group string) int64 {
	var lag int64
	for pk, end := range m.ends {
		lag += end - m.commits[partKey{group, pk.topic, pk.partition}]
	}
	return lag
}

// Groups returns the consumer groups that received records.
func (m *Model) Groups() []string { return append([]string{}, m.groups...) }

// UnknownPublishes returns the publish_unknown events and how many of them
// the records received resolve (finishChaos).
func (m *Model) UnknownPublishes() (unknown, resolved int64) { return m.unknown, m.resolved }

// UnknownCommits returns the commit_unknown events and how many of them a
// later inbox decision of their row settled.
func (m *Model) UnknownCommits() (unknown, decided int64) { return m.unknownCommits, m.decidedCommits }
