package model

import (
	"fmt"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Partition ownership (delivery layer): from the members' own
// partition_assigned, partition_revoked and partition_lost events and the
// supervisor's process_exit of a member process, the model keeps per
// group and partition the members that hold it. When the last holder lets
// it go (revoked, lost, or its process ended) the partition is without
// an owner until the next partition_assigned of it in that group; each
// such gap that closes is kept (Unowned) and held to spec's bound of the
// way it opened: spec.UnownedAfterLeave after a revoke or a clean exit,
// spec.UnownedAfterDeath after a lost partition or a process that died
// (partition-unowned-too-long). The gap's clock starts at the later of
// the release and the successor's group_join: a member that was not yet
// in the group (started after the release, as a restart's is) is not
// held to have taken the partition before it joined; a successor without
// a group_join is held from the release. A nemesis fault that strikes from a
// session timeout before the gap to its end (a kill, a cut link, a broker
// restart: the group cannot hand anything on meanwhile) lifts the bound to
// spec.UnownedAfterDeath plus the time the faults overlapped the gap. A
// gap still open at the end of the scenario (no member took the partition
// again, as after the last member stopped) is not judged.

// Causes of a gap, the way its partition was let go.
const (
	GapLeft = "left" // revoked, or the process exited 0
	GapDied = "died" // lost, or the process ended otherwise
)

// UnownedGap is one interval a partition of a group was without an owner.
type UnownedGap struct {
	Group, Topic string
	Partition    int32
	// From is the member that let it go, To the one assigned it next.
	From, To string
	// Cause is GapLeft or GapDied; Bound the bound it was held to.
	Cause string
	// Start is when its clock started (the release, or To's first
	// group_join when that came later); End is To's assignment.
	Start, End time.Time
	Bound      time.Duration
}

// Duration is End minus Start.
func (g UnownedGap) Duration() time.Duration { return g.End.Sub(g.Start) }

// ownershipState is the Model's part for partition ownership.
type ownershipState struct {
	holders map[partKey][]string // members that hold the partition now
	gaps    map[partKey]openGap  // partitions without an owner now
	unowned []UnownedGap         // the gaps that closed, in order (capped)
	windows []faultWindow        // the nemesis's faults (capped)
	// released: a member's partitions it revoked or lost and was not
	// assigned again; commitsReleased counts its offset_commits there.
	released        map[partKey]map[string]bool
	commitsReleased int64
	joined          map[string]int64 // a member's first group_join
}

// openGap is a gap that has not closed yet.
type openGap struct {
	from, cause string
	start       int64
}

// faultWindow is a nemesis fault from its fault event to its heal (end 0:
// not healed yet; a kill is never healed and lasts no time).
type faultWindow struct {
	point, target string
	start, end    int64
}

// Caps of the kept gaps and windows: a history cannot grow them without
// bound.
const (
	maxUnowned = 4096
	maxWindows = 4096
)

// stepOwnership: a member's group_join, partition_assigned,
// partition_revoked or partition_lost.
func (m *Model) stepOwnership(e *evidence.Event, src Source) {
	if e.Partition == nil && e.Kind != evidence.KindGroupJoin {
		return
	}
	k := partKey{m.intern(e.Consumer), m.intern(e.Topic), val(e.Partition)}
	actor := m.intern(e.Actor)
	switch e.Kind {
	case evidence.KindGroupJoin:
		if _, ok := m.joined[actor]; !ok && len(m.joined) < maxActors {
			if m.joined == nil {
				m.joined = map[string]int64{}
			}
			m.joined[actor] = e.Time.UnixNano()
		}
	case evidence.KindPartitionAssigned:
		m.assign(k, actor, e.Time.UnixNano(), src)
	case evidence.KindPartitionRevoked:
		m.release(k, actor, GapLeft, e.Time.UnixNano())
	case evidence.KindPartitionLost:
		m.release(k, actor, GapDied, e.Time.UnixNano())
	}
}

// releaseProcess: a process ended; every partition its member still held
// is let go, as a clean exit or a death.
func (m *Model) releaseProcess(e *evidence.Event) {
	if e.Kind != evidence.KindProcessExit || e.Target == "" {
		return
	}
	cause := GapDied
	if e.Detail == "exit 0" {
		cause = GapLeft
	}
	for k, hs := range m.holders {
		for _, h := range hs {
			if h == e.Target {
				m.release(k, h, cause, e.Time.UnixNano())
				break
			}
		}
	}
}

// assign closes k's gap, judging it, and adds actor to its holders.
func (m *Model) assign(k partKey, actor string, at int64, src Source) {
	if g, ok := m.gaps[k]; ok {
		delete(m.gaps, k)
		m.closeGap(k, g, actor, at, src)
	}
	delete(m.released[k], actor)
	for _, h := range m.holders[k] {
		if h == actor {
			return
		}
	}
	if m.holders == nil {
		m.holders = map[partKey][]string{}
	}
	m.holders[k] = append(m.holders[k], actor)
}

// release removes actor from k's holders; k's gap opens when none is left.
func (m *Model) release(k partKey, actor, cause string, at int64) {
	hs := m.holders[k]
	i := -1
	for j, h := range hs {
		if h == actor {
			i = j
		}
	}
	if i < 0 {
		return
	}
	if m.released == nil {
		m.released = map[partKey]map[string]bool{}
	}
	if m.released[k] == nil {
		m.released[k] = map[string]bool{}
	}
	m.released[k][actor] = true
	hs = append(hs[:i], hs[i+1:]...)
	if len(hs) > 0 {
		m.holders[k] = hs
		return
	}
	delete(m.holders, k)
	if m.gaps == nil {
		m.gaps = map[partKey]openGap{}
	}
	m.gaps[k] = openGap{from: actor, cause: cause, start: at}
}

// closeGap keeps a gap that closed at end and judges it, from the later
// of its release and to's group_join.
func (m *Model) closeGap(k partKey, g openGap, to string, end int64, src Source) {
	from := fmt.Sprintf("%s's release (%s)", g.from, g.cause)
	if j, ok := m.joined[to]; ok && j > g.start {
		g.start = j
		from = fmt.Sprintf("%s's group_join (after %s's release, %s)", to, g.from, g.cause)
	}
	base := spec.UnownedAfterLeave
	if g.cause == GapDied {
		base = spec.UnownedAfterDeath
	}
	bound, why := m.gapBound(base, g.start, end)
	d := time.Duration(end - g.start)
	if len(m.unowned) < maxUnowned {
		m.unowned = append(m.unowned, UnownedGap{Group: k.group, Topic: k.topic, Partition: k.partition, From: g.from, To: to,
			Cause: g.cause, Start: time.Unix(0, g.start).UTC(), End: time.Unix(0, end).UTC(), Bound: bound})
	}
	if d > bound {
		m.violate(RulePartitionUnownedTooLong, src, "",
			"partition %s/%d of group %s was without an owner for %v, from %s to %s's assignment: the bound is %v%s",
			k.topic, k.partition, k.group, d, from, to, bound, why)
	}
}

// gapBound is base, or under nemesis faults that struck from a session
// timeout before start to end spec.UnownedAfterDeath (at least) plus the
// time they overlapped [start, end]; why says so in words.
func (m *Model) gapBound(base time.Duration, start, end int64) (time.Duration, string) {
	var extra time.Duration
	var hit []string
	for _, w := range m.windows {
		wEnd := w.end
		switch {
		case w.point == string(spec.NemesisKill):
			wEnd = w.start
		case wEnd == 0:
			wEnd = end
		}
		if w.start > end || wEnd < start-int64(spec.GroupSessionTimeout) {
			continue
		}
		if o := min(wEnd, end) - max(w.start, start); o > 0 {
			extra += time.Duration(o)
		}
		if len(hit) < 4 {
			hit = append(hit, strings.TrimPrefix(w.point, spec.NemesisPrefix)+" of "+w.target)
		}
	}
	if hit == nil {
		return base, ""
	}
	b := max(base, spec.UnownedAfterDeath) + extra
	return b, fmt.Sprintf(" (under nemesis faults: %s)", strings.Join(hit, ", "))
}

// noteWindow keeps a nemesis fault's window: its fault event opens it,
// its heal closes it.
func (m *Model) noteWindow(e *evidence.Event) {
	if e.Actor != evidence.ActorNemesis || !strings.HasPrefix(e.Point, spec.NemesisPrefix) {
		return
	}
	at := e.Time.UnixNano()
	if e.Kind == evidence.KindHeal {
		for i := len(m.windows) - 1; i >= 0; i-- {
			if w := &m.windows[i]; w.end == 0 && w.point == e.Point && w.target == e.Target {
				w.end = at
				return
			}
		}
		return
	}
	if len(m.windows) < maxWindows {
		m.windows = append(m.windows, faultWindow{point: m.intern(e.Point), target: m.intern(e.Target), start: at})
	}
}

// Unowned returns the gaps that closed, in the order they closed.
func (m *Model) Unowned() []UnownedGap { return append([]UnownedGap(nil), m.unowned...) }

// noteCommitOwner counts an offset_commit of a member on a partition it
// had released and not been assigned again.
func (m *Model) noteCommitOwner(e *evidence.Event) {
	if e.Partition != nil && m.released[partKey{e.Consumer, e.Topic, *e.Partition}][e.Actor] {
		m.commitsReleased++
	}
}

// CommitsReleased returns the offset_commit events of a member on a
// partition it had revoked or lost and had not been assigned again.
func (m *Model) CommitsReleased() int64 { return m.commitsReleased }
