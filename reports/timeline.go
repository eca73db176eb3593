package reports

import (
	"errors"
	"fmt"
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
	var evs []logEvent
	for i, ref := range sc.Logs {
		es, err := logs.Events(ref)
		switch {
		case errors.Is(err, evidence.ErrTruncated):
			tl.Problems = append(tl.Problems, fmt.Sprintf(
				"%s: the last line is truncated (as a killed process leaves it); its %d complete events are drawn", ref.Path, len(es)))
		case err != nil && len(es) > 0:
			tl.Problems = append(tl.Problems, fmt.Sprintf("%s: %v; the %d events before it are drawn", ref.Path, err, len(es)))
		case err != nil:
			tl.Problems = append(tl.Problems, fmt.Sprintf("%s: %v", ref.Path, err))
		}
		for _, e := range es {
			evs = append(evs, logEvent{Event: e, log: i})
		}
	}
	// One timeline across the scenario's logs: by time, then by log, then
	// by seq (strictly increasing within a log).
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i], evs[j]
		if !a.Time.Equal(b.Time) {
			return a.Time.Before(b.Time)
		}
		if a.log != b.log {
			return a.log < b.log
		}
		return a.Seq < b.Seq
	})
	seen := map[string]bool{}
	for i := range evs {
		if evs[i].Kind == evidence.KindReceive {
			k := recordKey(evs[i].Event)
			evs[i].replay = seen[k]
			seen[k] = true
		}
	}
	tl.Events = len(evs)
	if len(evs) > 0 {
		tl.Mermaid, tl.Shown = diagram(evs)
	}
	return tl
}

func recordKey(e evidence.Event) string {
	return e.Topic + "\x00" + i32(e.Partition) + "\x00" + i64(e.Offset)
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

// diagram returns the sequenceDiagram lines of evs and how many events it
// draws one by one.
func diagram(evs []logEvent) ([]string, int) {
	// Participants: actors in order of appearance, then the database and
	// the broker when any event touches them.
	alias := map[string]string{}
	var out []string
	out = append(out, "sequenceDiagram")
	var usesDB, usesKafka bool
	var first, last string
	for _, e := range evs {
		if _, ok := alias[e.Actor]; !ok {
			a := "a" + strconv.Itoa(len(alias)+1)
			alias[e.Actor] = a
			out = append(out, fmt.Sprintf("    participant %s as %s", a, mtext(e.Actor)))
			if first == "" {
				first = a
			}
			last = a
		}
		switch e.Kind {
		case evidence.KindPublish, evidence.KindReceive, evidence.KindOffsetCommit:
			usesKafka = true
		case evidence.KindOrderRejected, evidence.KindFault:
		default:
			usesDB = true
		}
	}
	if usesDB {
		out = append(out, "    participant "+aliasDB+" as db")
		last = aliasDB
	}
	if usesKafka {
		out = append(out, "    participant "+aliasKafka+" as kafka")
		last = aliasKafka
	}
	span := first
	if last != first {
		span = first + "," + last
	}

	show := make([]bool, len(evs))
	if len(evs) <= maxTimelineEvents {
		for i := range show {
			show[i] = true
		}
	} else {
		n := 0
		for i, e := range evs {
			switch {
			case i < timelineHead || i >= len(evs)-timelineTail:
				show[i] = true
			case n < maxNotable && notable(e):
				show[i] = true
				n++
			}
		}
	}

	shown := 0
	var skipped []evidence.Event
	flush := func() {
		if len(skipped) == 0 {
			return
		}
		out = append(out, fmt.Sprintf("    Note over %s: %s", span, mtext(summaryNote(skipped))))
		skipped = nil
	}
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		if !show[i] {
			skipped = append(skipped, e.Event)
			continue
		}
		flush()
		if e.Kind == evidence.KindInvariant {
			// Consecutive invariant results share one note.
			var parts []string
			bad := false
			j := i
			for ; j < len(evs) && show[j] && evs[j].Kind == evidence.KindInvariant && evs[j].Actor == e.Actor; j++ {
				parts = append(parts, evs[j].Invariant+"="+i64(evs[j].Rows))
				if evs[j].Rows == nil || *evs[j].Rows != 0 {
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
		for _, l := range eventLines(e, alias[e.Actor]) {
			out = append(out, "    "+l)
		}
		shown++
	}
	flush()
	return out, shown
}

// summaryNote counts left-out events by kind, in the order of
// evidence.Kinds.
func summaryNote(es []evidence.Event) string {
	count := map[evidence.Kind]int{}
	for _, e := range es {
		count[e.Kind]++
	}
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
	return fmt.Sprintf("%d events summarised (counts by kind: %s)", len(es), strings.Join(parts, ", "))
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
