package reports

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

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
