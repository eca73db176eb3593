package reports

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
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

func buildTimeline(sc evidence.Scenario, logs LogSource) Timeline {
	tl := Timeline{Scenario: sc.ID, Status: sc.Status}
	if len(sc.Logs) == 0 {
		return tl
	}
	if logs == nil {
		tl.Problems = append(tl.Problems, "the event logs were not available to the report")
		return tl
	}
	// One timeline across the scenario's logs, merged as the verifier
	// merges them: the earliest head by time, a tie to the earlier log,
	// each log in its file order (seq strictly increasing). Each log is
	// read as a stream; only what the diagram draws is kept.
	readers := make([]*logReader, len(sc.Logs))
	nexts := make([]func() (logEvent, bool), len(sc.Logs))
	heads := make([]*logEvent, len(sc.Logs))
	for i, ref := range sc.Logs {
		readers[i] = &logReader{ref: ref, idx: i}
		next, stop := iter.Pull(readers[i].read(logs))
		defer stop()
		nexts[i] = next
	}
	advance := func(i int) {
		heads[i] = nil
		if e, ok := nexts[i](); ok {
			heads[i] = &e
		}
	}
	for i := range nexts {
		advance(i)
	}
	b := newTimelineBuilder()
	for {
		best := -1
		for i, h := range heads {
			if h != nil && (best < 0 || h.Time.Before(heads[best].Time)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		b.add(*heads[best])
		advance(best)
	}
	for _, r := range readers {
		tl.Problems = append(tl.Problems, r.problems...)
		tl.Unreadable += r.unreadable
	}
	tl.Problems = append(tl.Problems, b.problems()...)
	tl.Events = b.total
	if b.total > 0 {
		tl.Mermaid, tl.Shown = b.diagram()
	}
	return tl
}

// logReader reads one event log as a stream and records what it could not
// read.
type logReader struct {
	ref        evidence.LogRef
	idx        int
	events     int // events read
	unreadable int // lines that are not valid events
	problems   []string
	// Unreadable lines beyond the first maxNamedLines are counted here and
	// named by their range.
	unnamed             int
	firstUnnamed, lastN int64
}

// maxNamedLines is how many unreadable lines of one log are named one by
// one; the others are counted, with their range.
const maxNamedLines = 10

// maxErrText bounds the decoder's message quoted for an unreadable line
// (it may quote a field name of any length).
const maxErrText = 200

var (
	// errStop ends a scan early when the consumer of the events stops.
	errStop      = errors.New("stop")
	errEmptyLine = errors.New("the line is empty")
)

// read yields the events of the log in file order. A line that is not a
// valid event is counted and named, and reading goes on after it; a final
// line cut off without its newline is named as truncated. Only a line over
// evidence.MaxLineBytes or a read error ends the log early, and says so.
func (r *logReader) read(src LogSource) iter.Seq[logEvent] {
	return func(yield func(logEvent) bool) {
		rc, err := src.Open(r.ref)
		if err != nil {
			r.problems = append(r.problems, fmt.Sprintf("%s: not read: %v", r.ref.Path, err))
			return
		}
		defer rc.Close()
		var (
			lastNo    int64
			lastBad   int64 // line number of the last line that did not decode
			lastErr   error
			lastEvent bool // the last line decoded
		)
		err = evidence.ScanLines(rc, func(l evidence.Line) error {
			// The previous line is not the final one: name it as invalid.
			if lastBad != 0 {
				r.bad(lastBad, " is not a valid event: "+decodeText(lastErr))
				lastBad = 0
			}
			lastNo = l.No
			var (
				e   evidence.Event
				err = errEmptyLine
			)
			if len(bytes.TrimSpace(l.Raw)) > 0 {
				e, err = evidence.DecodeEvent(l.Raw)
			}
			if err != nil {
				lastBad, lastErr, lastEvent = l.No, err, false
				return nil
			}
			lastEvent = true
			r.events++
			if !yield(logEvent{Event: e, log: r.idx}) {
				return errStop
			}
			return nil
		})
		truncated := errors.Is(err, evidence.ErrTruncated)
		switch {
		case lastBad != 0 && truncated:
			r.bad(lastBad, fmt.Sprintf(", the final line, is truncated (no newline, as a process killed mid-write leaves it) and is not a valid event: %s; not drawn", decodeText(lastErr)))
		case lastBad != 0:
			r.bad(lastBad, " is not a valid event: "+decodeText(lastErr))
		}
		r.flushUnnamed()
		switch {
		case err == nil || errors.Is(err, errStop):
		case truncated && lastEvent:
			r.problems = append(r.problems, fmt.Sprintf("line %d of %s, the final line, lacks its newline but is a whole event: drawn", lastNo, r.ref.Path))
		case truncated:
		case errors.Is(err, evidence.ErrLineTooLong):
			r.unreadable++
			r.problems = append(r.problems, fmt.Sprintf("line %d of %s exceeds 1 MiB: not read, and neither is the rest of the log", lastNo+1, r.ref.Path))
		default:
			r.problems = append(r.problems, fmt.Sprintf("%s: reading stopped after line %d: %v; the rest of the log is not read", r.ref.Path, lastNo, err))
		}
	}
}

// bad counts an unreadable line and names it ("line <no> of <path>"
// followed by what), or counts it in the range of unnamed ones once
// maxNamedLines are named.
func (r *logReader) bad(no int64, what string) {
	r.unreadable++
	if r.unreadable <= maxNamedLines {
		r.problems = append(r.problems, fmt.Sprintf("line %d of %s%s", no, r.ref.Path, what))
		return
	}
	if r.unnamed == 0 {
		r.firstUnnamed = no
	}
	r.unnamed++
	r.lastN = no
}

func (r *logReader) flushUnnamed() {
	switch {
	case r.unnamed == 1:
		r.problems = append(r.problems, fmt.Sprintf("1 more line of %s is not a valid event (line %d)", r.ref.Path, r.firstUnnamed))
	case r.unnamed > 1:
		r.problems = append(r.problems, fmt.Sprintf("%d more lines of %s are not valid events (lines %d to %d)", r.unnamed, r.ref.Path, r.firstUnnamed, r.lastN))
	}
	r.unnamed = 0
}

// decodeText is the decoder's message for a line, cut to maxErrText.
func decodeText(err error) string {
	s := err.Error()
	if r := []rune(s); len(r) > maxErrText {
		s = string(r[:maxErrText]) + "…"
	}
	return s
}

// notable events are drawn even in the middle of a long scenario.
func notable(e logEvent) bool {
	switch e.Kind {
	case evidence.KindFault, evidence.KindLeaseExpired, evidence.KindInboxReject, evidence.KindOrderRolledBack:
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
	case evidence.KindPublish, evidence.KindReceive, evidence.KindOffsetCommit:
		b.usesKafka = true
	case evidence.KindOrderRejected, evidence.KindFault:
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

// diagram returns the sequenceDiagram lines and how many events it draws
// one by one.
func (b *timelineBuilder) diagram() ([]string, int) {
	for _, e := range b.window {
		b.draw(e)
	}
	b.window = nil
	out := append([]string{"sequenceDiagram"}, b.actors...)
	last := b.first
	if len(b.alias) > 0 {
		last = "a" + strconv.Itoa(len(b.alias))
	}
	if b.usesDB {
		out = append(out, "    participant "+aliasDB+" as db")
		last = aliasDB
	}
	if b.usesKafka {
		out = append(out, "    participant "+aliasKafka+" as kafka")
		last = aliasKafka
	}
	span := b.first
	if last != b.first {
		span = b.first + "," + last
	}

	shown := 0
	for i := 0; i < len(b.steps); i++ {
		s := b.steps[i]
		if s.gap != nil {
			out = append(out, fmt.Sprintf("    Note over %s: %s", span, mtext(s.gap.note())))
			continue
		}
		e := *s.ev
		if e.Kind == evidence.KindInvariant {
			// Consecutive invariant results share one note.
			var parts []string
			bad := false
			j := i
			for ; j < len(b.steps) && b.steps[j].ev != nil && b.steps[j].ev.Kind == evidence.KindInvariant && b.steps[j].ev.Actor == e.Actor; j++ {
				x := b.steps[j].ev
				parts = append(parts, x.Invariant+"="+i64(x.Rows))
				if x.Rows == nil || *x.Rows != 0 {
					bad = true
				}
			}
			head := "invariants (rows): "
			if bad {
				head = "VIOLATED invariants (rows): "
			}
			out = append(out, fmt.Sprintf("    Note over %s: %s", aliasDB, mtext(head+strings.Join(parts, ", "))))
			shown += j - i
			i = j - 1
			continue
		}
		for _, l := range eventLines(e, b.alias[e.Actor]) {
			out = append(out, "    "+l)
		}
		shown++
	}
	return out, shown
}

// diagram draws evs, in this order, as a timeline does.
func diagram(evs []logEvent) ([]string, int) {
	b := newTimelineBuilder()
	for _, e := range evs {
		b.add(e)
	}
	return b.diagram()
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
	return fmt.Sprintf("%d events summarised (counts by kind: %s)", c.n, strings.Join(parts, ", "))
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

// eventLines draws one event from participant a.
func eventLines(e logEvent, a string) []string {
	msg := func(from, arrow, to, text string) []string {
		return []string{fmt.Sprintf("%s%s%s: %s", from, arrow, to, mtext(text))}
	}
	note := func(over, text string) []string {
		return []string{fmt.Sprintf("Note over %s: %s", over, mtext(text))}
	}
	switch e.Kind {
	case evidence.KindSeedStock:
		return msg(a, "->>", aliasDB, fmt.Sprintf("seed stock %s = %s", e.SKU, i64(e.Stock)))
	case evidence.KindSeedOutbox:
		return msg(a, "->>", aliasDB, fmt.Sprintf("seed outbox row %s (aggregate %s, %s, v%s)", e.EventID, i64(e.OrderID), e.State, i64(e.ClaimVersion)))
	case evidence.KindOrderCommitted:
		return msg(a, "->>", aliasDB, fmt.Sprintf("commit order %s (%s x%s, stock left %s), intent %s, HTTP %d",
			i64(e.OrderID), e.SKU, i64(e.Quantity), i64(e.Stock), e.EventID, e.Status))
	case evidence.KindOutboxWritten:
		return msg(a, "->>", aliasDB, fmt.Sprintf("intent %s for order %s in its own transaction", e.EventID, i64(e.OrderID)))
	case evidence.KindOrderRolledBack:
		what := "rollback order"
		if e.OrderID != nil {
			what += " " + i64(e.OrderID)
		}
		if e.EventID != "" {
			what += " (intent " + e.EventID + ")"
		}
		return msg(a, "-x", aliasDB, fmt.Sprintf("%s, HTTP %d: %s", what, e.Status, e.Err))
	case evidence.KindOrderReplayed:
		return msg(aliasDB, "-->>", a, fmt.Sprintf("idempotent replay: order %s, HTTP %d, no writes", i64(e.OrderID), e.Status))
	case evidence.KindOrderRejected:
		return note(a, fmt.Sprintf("rejected, HTTP %d: %s (no writes)", e.Status, e.Reason))
	case evidence.KindClaim:
		return msg(a, "->>", aliasDB, fmt.Sprintf("claim %s token %s (was %s)", e.EventID, token(e.Event), e.StateBefore))
	case evidence.KindPublish:
		if e.Err != "" {
			return msg(a, "-x", aliasKafka, fmt.Sprintf("publish %s token %s failed: %s", e.EventID, token(e.Event), e.Err))
		}
		return msg(a, "->>", aliasKafka, fmt.Sprintf("publish %s token %s: p%s offset %s", e.EventID, token(e.Event), i32(e.Partition), i64(e.Offset)))
	case evidence.KindMark:
		if e.Rows != nil && *e.Rows == 0 {
			return []string{
				"rect rgb(255, 225, 225)",
				fmt.Sprintf("%s-x%s: %s", a, aliasDB, mtext(fmt.Sprintf("mark SENT %s token %s: stale CAS: 0 rows", e.EventID, token(e.Event)))),
				"end",
			}
		}
		return msg(a, "->>", aliasDB, fmt.Sprintf("mark SENT %s token %s: %s %s", e.EventID, token(e.Event), i64(e.Rows), plural(deref(e.Rows), "row", "rows")))
	case evidence.KindLeaseExpired:
		return msg(a, "->>", aliasDB, fmt.Sprintf("lease of %s token %s expired by SQL: %s %s", e.EventID, token(e.Event), i64(e.Rows), plural(deref(e.Rows), "row", "rows")))
	case evidence.KindReceive:
		text := fmt.Sprintf("receive %s: p%s offset %s (group %s)", e.EventID, i32(e.Partition), i64(e.Offset), short(e.Consumer, e.RunID))
		if e.replay {
			text = "REPLAY " + text
		}
		return msg(aliasKafka, "->>", a, text)
	case evidence.KindInboxInsert:
		return msg(a, "->>", aliasDB, fmt.Sprintf("inbox insert %s (%s)", e.EventID, e.Consumer))
	case evidence.KindInboxReject:
		return msg(a, "-x", aliasDB, fmt.Sprintf("inbox rejects duplicate %s (%s): rolled back", e.EventID, e.Consumer))
	case evidence.KindEffect:
		return msg(a, "->>", aliasDB, fmt.Sprintf("effect: notification %s for %s (order %s)", i64(e.NotificationID), e.EventID, i64(e.OrderID)))
	case evidence.KindOffsetCommit:
		return msg(a, "->>", aliasKafka, fmt.Sprintf("commit offset p%s next %s (group %s)", i32(e.Partition), i64(e.Offset), short(e.Consumer, e.RunID)))
	case evidence.KindObserve:
		return note(aliasDB, fmt.Sprintf("%s is %s (v%s)", e.EventID, e.State, i64(e.ClaimVersion)))
	case evidence.KindFault:
		return note(a, fmt.Sprintf("FAULT %s: %s", e.Point, e.Detail))
	case evidence.KindInvariant:
		return note(aliasDB, fmt.Sprintf("invariant %s: %s rows", e.Invariant, i64(e.Rows)))
	}
	return note(a, fmt.Sprintf("%s (kind unknown to the report)", e.Kind))
}

// token renders a claim token as v<version>/<claim id>. A claim id that
// ends in "-<run id>" is shown without it, and a long one is cut to its
// first 12 characters.
func token(e evidence.Event) string {
	return "v" + i64(e.ClaimVersion) + "/" + short(e.ClaimID, e.RunID)
}

// short strips a "-<run id>" suffix and cuts s to 12 characters if it is
// longer than 24.
func short(s, runID string) string {
	if runID != "" {
		s = strings.TrimSuffix(s, "-"+runID)
	}
	if r := []rune(s); len(r) > 24 {
		s = string(r[:12]) + "…"
	}
	return s
}

func i64(p *int64) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatInt(*p, 10)
}

func i32(p *int32) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatInt(int64(*p), 10)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// mermaidEscaper makes text safe inside a Mermaid sequence diagram: ";" and
// "#" would end a statement or start an entity, "<" and ">" are read as
// HTML, "%" may start a comment, line breaks end a statement.
var mermaidEscaper = strings.NewReplacer(
	"#", "#35;",
	";", "#59;",
	"<", "#60;",
	">", "#62;",
	"\"", "#34;",
	"%", "#37;",
	"\r\n", " ",
	"\n", " ",
	"\r", " ",
)

func mtext(s string) string { return mermaidEscaper.Replace(s) }
