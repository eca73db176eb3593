package reports

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Labels are short so that a diagram keeps its text readable in GitHub's
// column: an event id, a token, an offset. Anything longer (an error, a
// fault's detail, a rejection reason) goes to a numbered footnote under
// the diagram, and the label carries its number.

// maxLabelText is the longest free text (a reason, a fault point) a label
// carries itself; longer text becomes a footnote.
const maxLabelText = 36

// footnoter registers a footnote and returns its marker, " [n]".
type footnoter func(text string) string

// eventLines draws one event from participant a; over is the participant
// a note about the event belongs over (a fault's target), fn takes the
// footnotes.
func eventLines(e logEvent, a, over string, fn footnoter) []string {
	msg := func(from, arrow, to, text string) []string {
		return []string{fmt.Sprintf("%s%s%s: %s", from, arrow, to, mtext(text))}
	}
	note := func(over, text string) []string {
		return []string{fmt.Sprintf("Note over %s: %s", over, mtext(text))}
	}
	switch e.Kind {
	case evidence.KindSeedStock:
		return msg(a, "->>", aliasDB, fmt.Sprintf("seed %s = %s", e.SKU, i64(e.Stock)))
	case evidence.KindSeedOutbox:
		return msg(a, "->>", aliasDB, fmt.Sprintf("seed outbox %s (agg %s, %s)", e.EventID, i64(e.OrderID), e.State))
	case evidence.KindOrderCommitted:
		label := fmt.Sprintf("commit order %s + %s, stock %s", i64(e.OrderID), e.EventID, i64(e.Stock))
		if e.OrderID != nil && e.EventID == evidence.EventIDFor(*e.OrderID) && len(label) > 48 {
			// Long order ids (the generated load's, past 2^53): the
			// intent's id repeats the order's.
			label = fmt.Sprintf("commit order %s + intent, stock %s", i64(e.OrderID), i64(e.Stock))
			if len(label) > 48 {
				label = fmt.Sprintf("order %s + intent, stock %s", i64(e.OrderID), i64(e.Stock))
			}
		}
		return msg(a, "->>", aliasDB, label)
	case evidence.KindOutboxWritten:
		return msg(a, "->>", aliasDB, fmt.Sprintf("intent %s, own tx", e.EventID))
	case evidence.KindOrderAdvanced:
		return msg(a, "->>", aliasDB, fmt.Sprintf("order %s %s + %s", i64(e.OrderID), e.OrderStatus, e.EventID))
	case evidence.KindOrderRolledBack:
		what := "rollback"
		if e.OrderID != nil {
			what += " order " + i64(e.OrderID)
		}
		if e.EventID != "" {
			what += " + " + e.EventID
		}
		return msg(a, "-x", aliasDB, fmt.Sprintf("%s, HTTP %d%s", what, e.Status, fn(e.Err)))
	case evidence.KindOrderReplayed:
		return msg(aliasDB, "-->>", a, fmt.Sprintf("replay order %s, no writes", i64(e.OrderID)))
	case evidence.KindOrderRejected:
		return note(a, fmt.Sprintf("HTTP %d: %s", e.Status, brief(e.Reason, fn)))
	case evidence.KindOrderRequest:
		return note(a, requestText(e, fn))
	case evidence.KindClaim:
		text := fmt.Sprintf("claim %s %s", e.EventID, token(e.Event))
		if e.StateBefore != "" && e.StateBefore != evidence.StatePending {
			text += " (was " + e.StateBefore + ")"
		}
		return msg(a, "->>", aliasDB, text)
	case evidence.KindPublish:
		if e.Err != "" {
			return msg(a, "-x", aliasKafka, fmt.Sprintf("publish %s v%s failed%s", e.EventID, i64(e.ClaimVersion), fn(e.Err)))
		}
		return msg(a, "->>", aliasKafka, fmt.Sprintf("publish %s v%s: %s", e.EventID, i64(e.ClaimVersion), at(e.Event)))
	case evidence.KindPublishUnknown:
		return msg(a, "-x", aliasKafka, fmt.Sprintf("publish %s v%s: outcome unknown%s", e.EventID, i64(e.ClaimVersion), fn(e.Err)))
	case evidence.KindMark:
		if e.Rows != nil && *e.Rows == 0 {
			return []string{
				"rect rgb(255, 225, 225)",
				fmt.Sprintf("%s-x%s: %s", a, aliasDB, mtext(fmt.Sprintf("mark %s %s: 0 rows, stale", e.EventID, token(e.Event)))),
				"end",
			}
		}
		return msg(a, "->>", aliasDB, fmt.Sprintf("mark SENT %s %s: %s %s", e.EventID, token(e.Event), i64(e.Rows), plural(deref(e.Rows), "row", "rows")))
	case evidence.KindLeaseExpired:
		return msg(a, "->>", aliasDB, fmt.Sprintf("expire lease %s v%s: %s %s", e.EventID, i64(e.ClaimVersion), i64(e.Rows), plural(deref(e.Rows), "row", "rows")))
	case evidence.KindReceive:
		text := fmt.Sprintf("receive %s %s", e.EventID, at(e.Event))
		if e.replay {
			text = "REPLAY " + text
		}
		return msg(aliasKafka, "->>", a, text)
	case evidence.KindInboxInsert:
		return msg(a, "->>", aliasDB, "inbox "+e.EventID)
	case evidence.KindInboxReject:
		return msg(a, "-x", aliasDB, "inbox rejects "+e.EventID)
	case evidence.KindEffect:
		return msg(a, "->>", aliasDB, fmt.Sprintf("notification %s (%s)", i64(e.NotificationID), e.EventID))
	case evidence.KindEffectRolledBack:
		return msg(a, "-x", aliasDB, fmt.Sprintf("effect %s rolled back%s", e.EventID, fn(e.Err)))
	case evidence.KindCommitUnknown:
		return msg(a, "-x", aliasDB, fmt.Sprintf("commit %s: outcome unknown%s", e.EventID, fn(e.Err)))
	case evidence.KindOffsetCommit:
		return msg(a, "->>", aliasKafka, fmt.Sprintf("commit p%s next %s", i32(e.Partition), i64(e.Offset)))
	case evidence.KindGroupJoin:
		return note(a, "joins "+e.Consumer)
	case evidence.KindPartitionAssigned:
		return note(a, fmt.Sprintf("owns p%s", i32(e.Partition)))
	case evidence.KindPartitionRevoked:
		return note(a, fmt.Sprintf("gives up p%s", i32(e.Partition)))
	case evidence.KindPartitionLost:
		return note(a, fmt.Sprintf("lost p%s", i32(e.Partition)))
	case evidence.KindObserve:
		return note(aliasDB, fmt.Sprintf("%s %s v%s", e.EventID, e.State, i64(e.ClaimVersion)))
	case evidence.KindFault:
		what := "FAULT "
		if strings.Contains(e.Detail, "SIGKILL") {
			what = "SIGKILL "
		}
		return note(over, what+brief(e.Point, fn)+fn(e.Detail))
	case evidence.KindInvariant:
		return note(aliasDB, fmt.Sprintf("%s: %s rows", e.Invariant, i64(e.Rows)))
	case evidence.KindHeal:
		return note(over, "HEAL "+brief(e.Point, fn)+fn(e.Detail))
	case evidence.KindProcessStart:
		return note(a, brief("start "+e.Target+" pid "+i64(e.PID), fn))
	case evidence.KindProcessExit:
		return note(a, brief("end "+e.Target+" pid "+i64(e.PID), fn)+fn(e.Detail))
	case evidence.KindFaultSkipped:
		return note(over, "SKIPPED "+brief(e.Point, fn)+fn(e.Detail))
	case evidence.KindCallFailed:
		return note(a, brief("call failed "+e.Target+" ("+e.Reason+")", fn)+fn(e.Detail))
	}
	return note(a, brief(string(e.Kind), fn)+" (unknown kind)")
}

// requestText is the client's record of a request: what it sent as whom
// and what it got.
func requestText(e logEvent, fn footnoter) string {
	who := "no token"
	if e.Principal != "" {
		who = "as " + e.Principal
	}
	got := fmt.Sprintf("HTTP %d", e.Status)
	if e.OrderID != nil {
		got += ", order " + i64(e.OrderID)
	}
	return fmt.Sprintf("POST %s %s: %s", brief(e.Key, fn), brief(who, fn), got)
}

// brief is s when it is short, else a footnote marker in its place.
func brief(s string, fn footnoter) string {
	if len([]rune(s)) <= maxLabelText {
		return s
	}
	return "see" + fn(s)
}

// at is where a record is: p<partition>@<offset>.
func at(e evidence.Event) string {
	return "p" + i32(e.Partition) + "@" + i64(e.Offset)
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
