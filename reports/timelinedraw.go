package reports

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// What a diagram draws, besides its events one by one: the invariant
// results go to a table under it, runs of similar events are folded into
// one note, and long texts become footnotes.
const (
	// collapseMin is the shortest run of similar events that is folded:
	// its first and last events are drawn, a note counts the others.
	collapseMin = 4
	// diagramConfig keeps the lifelines close (narrower actor boxes, no
	// second row of actors at the bottom) so that a diagram of seven
	// participants fits GitHub's column without scaling its text down.
	diagramConfig = `%%{init: {"sequence": {"width": 110, "actorMargin": 40, "mirrorActors": false}}}%%`
)

// drawing is a diagram and what goes under it.
type drawing struct {
	lines []string
	// drawn events one by one, tabulated invariant results, collapsed
	// events counted in a fold note, summarised events counted in a gap
	// note.
	drawn, tabulated, collapsed, summarised int
	invariants                              []TimelineInvariant
	footnotes                               []string
}

// footnote registers text and returns its marker.
func (d *drawing) footnote(text string) string {
	d.footnotes = append(d.footnotes, text)
	return " [" + strconv.Itoa(len(d.footnotes)) + "]"
}

// diagram draws what the builder kept.
func (b *timelineBuilder) diagram() drawing {
	for _, e := range b.window {
		b.draw(e)
	}
	b.window = nil
	var d drawing
	d.lines = append([]string{diagramConfig, "sequenceDiagram"}, b.actors...)
	last := b.first
	if len(b.alias) > 0 {
		last = "a" + strconv.Itoa(len(b.alias))
	}
	if b.usesDB {
		d.lines = append(d.lines, "    participant "+aliasDB+" as db")
		last = aliasDB
	}
	if b.usesKafka {
		d.lines = append(d.lines, "    participant "+aliasKafka+" as kafka")
		last = aliasKafka
	}
	span := b.first
	if last != b.first {
		span = b.first + "," + last
	}
	steps := b.withoutInvariants(&d)
	for i := 0; i < len(steps); i++ {
		s := steps[i]
		if s.gap != nil {
			d.summarised += s.gap.n
			d.lines = append(d.lines, fmt.Sprintf("    Note over %s: %s", span, mtext(fmt.Sprintf("… %d more events", s.gap.n)+d.footnote(s.gap.note()))))
			continue
		}
		if n := runLength(steps[i:]); n >= collapseMin {
			b.drawEvent(&d, *s.ev)
			a := b.alias[s.ev.Actor]
			d.lines = append(d.lines, fmt.Sprintf("    Note over %s: %s", a, mtext(fmt.Sprintf("… %d more %s", n-2, kindNoun(s.ev.Kind)))))
			d.collapsed += n - 2
			b.drawEvent(&d, *steps[i+n-1].ev)
			i += n - 1
			continue
		}
		b.drawEvent(&d, *s.ev)
	}
	return d
}

// withoutInvariants takes the invariant results out of the steps (they
// become the table under the diagram) and returns the rest.
func (b *timelineBuilder) withoutInvariants(d *drawing) []step {
	out := make([]step, 0, len(b.steps))
	for _, s := range b.steps {
		if s.ev != nil && s.ev.Kind == evidence.KindInvariant {
			d.invariants = append(d.invariants, TimelineInvariant{Actor: s.ev.Actor, ID: s.ev.Invariant, Rows: s.ev.Rows})
			d.tabulated++
			continue
		}
		out = append(out, s)
	}
	return out
}

func (b *timelineBuilder) drawEvent(d *drawing, e logEvent) {
	a := b.alias[e.Actor]
	over := a
	if e.Kind == evidence.KindFault {
		over = b.faultTarget(e.Event)
	}
	for _, l := range eventLines(e, a, over, d.footnote) {
		d.lines = append(d.lines, "    "+l)
	}
	d.drawn++
}

// faultTarget is the participant a fault's note belongs over: the actor
// that logged it, unless that is the scenario driver acting on another
// actor (a kill), in which case the participant its detail names.
func (b *timelineBuilder) faultTarget(e evidence.Event) string {
	own := b.alias[e.Actor]
	if e.Actor != scenarioActor {
		return own
	}
	best := ""
	for actor := range b.alias {
		if actor != e.Actor && len(actor) > len(best) && namesWord(e.Detail, actor) {
			best = actor
		}
	}
	if best == "" {
		return own
	}
	return b.alias[best]
}

// scenarioActor is the actor name of the scenario driver in event logs.
const scenarioActor = "scenario"

// namesWord tells whether word occurs in s as a whole word (not inside a
// longer name such as relay-a-<run id>).
func namesWord(s, word string) bool {
	inName := func(r rune) bool { return r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	for i := 0; ; {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if !inName(before) && !inName(after) {
			return true
		}
		i = start + 1
	}
}

// runLength is how many steps from the first one are similar events (see
// similar); 0 when the first is not an event.
func runLength(steps []step) int {
	if len(steps) == 0 || steps[0].ev == nil || notable(*steps[0].ev) {
		return 0
	}
	n := 1
	for n < len(steps) && steps[n].ev != nil && similar(*steps[0].ev, *steps[n].ev) {
		n++
	}
	return n
}

// similar events are drawn alike: same actor and kind, same outcome.
// Notable events are never folded.
func similar(a, b logEvent) bool {
	if notable(b) || a.Actor != b.Actor || a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case evidence.KindOrderRejected:
		return a.Status == b.Status && a.Reason == b.Reason
	case evidence.KindOrderRequest:
		return a.Status == b.Status
	case evidence.KindClaim:
		return a.StateBefore == b.StateBefore
	case evidence.KindMark, evidence.KindLeaseExpired:
		return deref(a.Rows) == deref(b.Rows)
	case evidence.KindFault, evidence.KindObserve, evidence.KindSeedOutbox, evidence.KindOrderRolledBack:
		return false
	}
	return true
}

// kindNoun names events of a kind in a fold note.
func kindNoun(k evidence.Kind) string {
	switch k {
	case evidence.KindSeedStock:
		return "seeds"
	case evidence.KindOrderCommitted:
		return "orders"
	case evidence.KindOrderAdvanced:
		return "order status changes"
	case evidence.KindOrderReplayed:
		return "replayed orders"
	case evidence.KindOrderRejected:
		return "rejections like these"
	case evidence.KindOrderRequest:
		return "client requests like these"
	case evidence.KindClaim:
		return "claims"
	case evidence.KindPublish:
		return "publishes"
	case evidence.KindMark:
		return "marks"
	case evidence.KindReceive:
		return "receives"
	case evidence.KindInboxInsert:
		return "inbox rows"
	case evidence.KindEffect:
		return "notifications"
	case evidence.KindOffsetCommit:
		return "offset commits"
	}
	return string(k) + " events"
}

// diagram draws evs, in this order, as a timeline does.
func diagram(evs []logEvent) drawing {
	b := newTimelineBuilder()
	for _, e := range evs {
		b.add(e)
	}
	return b.diagram()
}
