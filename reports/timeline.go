package reports

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// A scenario with more than maxTimelineEvents events is summarised: the
// first timelineHead and last timelineTail events are drawn, plus up to
// maxNotable notable events in between (faults, stale marks, lease
// expiries, rejections, replays); every run of events left out becomes a
// note that counts them by kind. Nothing is dropped silently.
const (
	maxTimelineEvents = 40
	timelineHead      = 15
	timelineTail      = 15
	maxNotable        = 20
)

// Participant aliases of the database and the broker; actors are a1, a2...
const (
	aliasDB    = "db"
	aliasKafka = "kafka"
)

type logEvent struct {
	evidence.Event
	log    int  // index of the log in the scenario
	replay bool // a receive of a record already received in this scenario
}

// notable events are drawn even in the middle of a long scenario.
func notable(e logEvent) bool {
	switch e.Kind {
	case evidence.KindFault, evidence.KindLeaseExpired, evidence.KindInboxReject, evidence.KindOrderRolledBack,
		evidence.KindPublishUnknown, evidence.KindEffectRolledBack, evidence.KindCommitUnknown:
		return true
	case evidence.KindMark:
		return e.Rows != nil && *e.Rows == 0
	case evidence.KindPublish:
		return e.Err != ""
	case evidence.KindReceive:
		return e.replay
	}
	return false
}

// Bounds of what a timeline keeps besides the events it draws.
const (
	// maxActors is how many actors get a participant on first
	// appearance; beyond it, only actors of drawn events do.
	maxActors = 16
	// maxUnknownKinds is how many kinds unknown to the report a summary
	// note counts by name; the rest are counted together.
	maxUnknownKinds = 8
	// maxOffsetSpans bounds the received offsets remembered to recognise
	// replays (as ranges: one per partition for a consumer reading in
	// order).
	maxOffsetSpans = 1 << 16
)

// timelineBuilder takes the merged events of one scenario one at a time
// and keeps only what the diagram draws: the first timelineHead events,
// a window of the last ones, up to maxNotable notable events in between,
// and for every run of events left out its count by kind.
type timelineBuilder struct {
	total int
	steps []step
	// window holds the events not yet decided on, oldest first: while the
	// scenario may still be short enough to draw whole, up to
	// maxTimelineEvents-timelineHead of them; once it is known to be
	// long, the last timelineTail.
	window   []logEvent
	long     bool
	notables int

	alias             map[string]string
	actors            []string // participant lines of the actors, in order of aliasing
	first             string   // alias of the first actor
	usesDB, usesKafka bool

	received    map[partitionKey]*offsetSet
	spans       int
	replaysLost bool // maxOffsetSpans was reached: later replays may go unmarked
}

// step is one entry of the diagram: an event drawn one by one, or a run
// of events left out.
type step struct {
	ev  *logEvent
	gap *kindCounts
}

type partitionKey struct {
	topic     string
	partition int64
}

func newTimelineBuilder() *timelineBuilder {
	return &timelineBuilder{alias: map[string]string{}, received: map[partitionKey]*offsetSet{}}
}

// add takes the next event of the merged timeline.
func (b *timelineBuilder) add(e logEvent) {
	b.total++
	if len(b.alias) < maxActors {
		b.aliasOf(e.Actor)
	}
	switch e.Kind {
	case evidence.KindPublish, evidence.KindPublishUnknown, evidence.KindReceive, evidence.KindOffsetCommit:
		b.usesKafka = true
	case evidence.KindPartitionAssigned, evidence.KindPartitionRevoked, evidence.KindPartitionLost, evidence.KindGroupJoin:
	case evidence.KindOrderRejected, evidence.KindOrderRequest, evidence.KindFault:
	default:
		b.usesDB = true
	}
	if e.Kind == evidence.KindReceive {
		e.replay = b.receive(e.Event)
	}
	if b.total <= timelineHead {
		b.draw(e)
		return
	}
	b.window = append(b.window, e)
	if !b.long && len(b.window) > maxTimelineEvents-timelineHead {
		b.long = true
	}
	if !b.long {
		return
	}
	// The oldest events of the window are followed by at least
	// timelineTail others: they are in the middle.
	for len(b.window) > timelineTail {
		m := b.window[0]
		b.window = b.window[1:]
		if b.notables < maxNotable && notable(m) {
			b.notables++
			b.draw(m)
		} else {
			b.skip(m)
		}
	}
}

func (b *timelineBuilder) draw(e logEvent) {
	b.aliasOf(e.Actor)
	b.steps = append(b.steps, step{ev: &e})
}

func (b *timelineBuilder) skip(e logEvent) {
	if n := len(b.steps); n == 0 || b.steps[n-1].gap == nil {
		b.steps = append(b.steps, step{gap: &kindCounts{}})
	}
	b.steps[len(b.steps)-1].gap.add(e.Kind)
}

func (b *timelineBuilder) aliasOf(actor string) string {
	a, ok := b.alias[actor]
	if !ok {
		a = "a" + strconv.Itoa(len(b.alias)+1)
		b.alias[actor] = a
		b.actors = append(b.actors, fmt.Sprintf("    participant %s as %s", a, mtext(actor)))
		if b.first == "" {
			b.first = a
		}
	}
	return a
}

// receive records the record of a receive and reports whether it was
// received before in this scenario.
func (b *timelineBuilder) receive(e evidence.Event) bool {
	k := partitionKey{topic: e.Topic, partition: math.MinInt64}
	if e.Partition != nil {
		k.partition = int64(*e.Partition)
	}
	off := int64(math.MinInt64)
	if e.Offset != nil {
		off = *e.Offset
	}
	s := b.received[k]
	if s == nil {
		if b.spans >= maxOffsetSpans {
			b.replaysLost = true
			return false
		}
		s = &offsetSet{}
		b.received[k] = s
	}
	if s.contains(off) {
		return true
	}
	if b.spans >= maxOffsetSpans && !s.adjacent(off) {
		b.replaysLost = true
		return false
	}
	b.spans += s.add(off)
	return false
}

// problems are the notes of the builder itself.
func (b *timelineBuilder) problems() []string {
	if !b.replaysLost {
		return nil
	}
	return []string{fmt.Sprintf("the received offsets fall into more than %d separate ranges: receives after that are not checked for replays", maxOffsetSpans)}
}

// kindCounts counts the events of one run left out of a diagram.
type kindCounts struct {
	n      int
	byKind map[evidence.Kind]int
	other  int // events of unknown kinds beyond maxUnknownKinds
}

var knownKind = func() map[evidence.Kind]bool {
	m := map[evidence.Kind]bool{}
	for _, k := range evidence.Kinds {
		m[k] = true
	}
	return m
}()

func (c *kindCounts) add(k evidence.Kind) {
	c.n++
	if c.byKind == nil {
		c.byKind = map[evidence.Kind]int{}
	}
	if _, ok := c.byKind[k]; !ok && !knownKind[k] && len(c.byKind) >= len(evidence.Kinds)+maxUnknownKinds {
		c.other++
		return
	}
	c.byKind[k]++
}

// note counts the events by kind, in the order of evidence.Kinds, then
// unknown kinds sorted.
func (c *kindCounts) note() string {
	count := maps.Clone(c.byKind)
	var parts []string
	for _, k := range evidence.Kinds {
		if count[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, count[k]))
			delete(count, k)
		}
	}
	var unknown []string
	for k, n := range count {
		unknown = append(unknown, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(unknown)
	parts = append(parts, unknown...)
	if c.other > 0 {
		parts = append(parts, fmt.Sprintf("other unknown kinds=%d", c.other))
	}
	return fmt.Sprintf("%d events not drawn one by one: %s", c.n, strings.Join(parts, ", "))
}

// offsetSet is a set of offsets kept as sorted, disjoint, non-adjacent
// inclusive ranges.
type offsetSet struct{ spans [][2]int64 }

// find returns the index of the first range starting after x.
func (s *offsetSet) find(x int64) int {
	return sort.Search(len(s.spans), func(i int) bool { return s.spans[i][0] > x })
}

func (s *offsetSet) contains(x int64) bool {
	i := s.find(x)
	return i > 0 && s.spans[i-1][1] >= x
}

// adjacent reports whether x would extend a range rather than start one.
func (s *offsetSet) adjacent(x int64) bool {
	i := s.find(x)
	return (i > 0 && x != math.MinInt64 && s.spans[i-1][1] == x-1) ||
		(i < len(s.spans) && x != math.MaxInt64 && s.spans[i][0] == x+1)
}

// add inserts x (not in the set) and returns the change in the number of
// ranges (1, 0 or -1).
func (s *offsetSet) add(x int64) int {
	i := s.find(x)
	joinsPrev := i > 0 && x != math.MinInt64 && s.spans[i-1][1] == x-1
	joinsNext := i < len(s.spans) && x != math.MaxInt64 && s.spans[i][0] == x+1
	switch {
	case joinsPrev && joinsNext:
		s.spans[i-1][1] = s.spans[i][1]
		s.spans = slices.Delete(s.spans, i, i+1)
		return -1
	case joinsPrev:
		s.spans[i-1][1] = x
		return 0
	case joinsNext:
		s.spans[i][0] = x
		return 0
	}
	s.spans = slices.Insert(s.spans, i, [2]int64{x, x})
	return 1
}
