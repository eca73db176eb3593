package checks

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable returns s with every character that a terminal would act on
// instead of showing shown as an escape: C0 controls and DEL as \xNN
// (\x1b, \x0d for CR, \x0a for LF, \x7f ...), C1 controls and the invisible format
// characters (bidi overrides and isolates U+202A-202E and U+2066-2069,
// marks, zero-width characters, line and paragraph separators) as \uNNNN,
// and a byte that is not UTF-8 as \xNN. Everything the verdict quotes from
// a bundle (rules, paths, values, actors, scenario ids, messages built from
// them) comes from someone who is not trusted: a bundle must not be able to
// clear the screen and paint "PASS" over a FAIL. Printable text (letters
// of any script, spaces, punctuation) is kept as it is.
func Printable(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f || (r > 0x9f && !hiddenRune(r)):
			b.WriteString(s[i : i+n])
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// hiddenRune reports a character above U+009F that is not shown as itself:
// a format character (bidi controls, zero-width joiners, the BOM), a line
// or paragraph separator, a private-use or unassigned code point, or a
// space other than U+0020. unicode.IsPrint decides, as strconv.Quote does.
func hiddenRune(r rune) bool { return !strconv.IsPrint(r) }

// WriteText renders v for a person: the verdict, what was checked, every
// reason (failures first, each with where it was found and what differs),
// and the invariants compared. Every string in it goes through Printable:
// most of them come from the bundle being judged.
func WriteText(w io.Writer, v *Verdict) error {
	p := Printable
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "orderflow-audit verify: %s%s\n", p(v.StatusLine()), p(auditedSuffix(v))) // proofrender.go
	fmt.Fprintf(b, "evidence   %s (run %s)\n", p(v.Evidence), p(v.RunID))
	if v.Planted != "" {
		fmt.Fprintf(b, "planted    %s (a negative control: this run is expected to FAIL)\n", p(v.Planted))
	}
	fmt.Fprintf(b, "checked    %d scenario(s), %d event(s); invariants on %s\n", v.Scenarios, v.Events, p(v.Engine))
	writeBlackBoxLine(b, v) // blackboxlayer.go
	for _, u := range v.Unwitnessed {
		fmt.Fprintf(b, "unwitnessed %s (allowed by --allow-unwitnessed: the actors' word alone)\n", p(u))
	}

	writeWitnessed(b, v)  // proofrender.go
	writeRuleCounts(b, v) // proofrender.go
	var fails, incs []Reason
	for _, r := range v.Reasons {
		if r.Status == Fail {
			fails = append(fails, r)
		} else {
			incs = append(incs, r)
		}
	}
	for _, group := range []struct {
		title string
		rs    []Reason
	}{{"failed", fails}, {"inconclusive", incs}} {
		if len(group.rs) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n%s (%d):\n", group.title, len(group.rs))
		for _, r := range group.rs {
			writeReason(b, r)
		}
	}
	if len(v.Invariants) > 0 {
		nonzero := 0
		for _, c := range v.Invariants {
			if c.Replayed != 0 || c.Live != c.Replayed {
				nonzero++
			}
		}
		fmt.Fprintf(b, "\ninvariants: %d checked on the replayed end state", len(v.Invariants))
		if nonzero == 0 {
			fmt.Fprintf(b, ", every one 0 rows and equal to the live result\n")
		} else {
			fmt.Fprintf(b, "; these differ from 0 or from the live result:\n")
			fmt.Fprintf(b, "  %-22s %-22s %8s %8s\n", "scenario", "invariant", "replayed", "live")
			for _, c := range v.Invariants {
				if c.Replayed == 0 && c.Live == c.Replayed {
					continue
				}
				live := fmt.Sprint(c.Live)
				if c.Live < 0 {
					live = "-"
				}
				fmt.Fprintf(b, "  %-22s %-22s %8d %8s\n", p(c.Scenario), p(c.ID), c.Replayed, live)
			}
		}
	}
	if len(v.Resolved) > 0 {
		fmt.Fprintf(b, "\nunknown outcomes settled by the binlog witness (%d): transactions that committed and that no actor logged\n", len(v.Resolved))
		for _, r := range v.Resolved {
			fmt.Fprintf(b, "  %s gtid %s: %s\n", p(r.Scenario), p(r.GTID), p(r.What))
		}
	}
	for _, wng := range v.Warnings {
		fmt.Fprintf(b, "\nwarning: %s\n", p(wng))
	}
	return b.Flush()
}

func writeReason(b *bufio.Writer, r Reason) {
	p := Printable
	where := []string{}
	if r.Scenario != "" {
		where = append(where, p(r.Scenario))
	}
	if r.Log != "" {
		loc := p(r.Log)
		if r.Line > 0 {
			loc += fmt.Sprintf(":%d", r.Line)
		}
		if r.Seq > 0 {
			loc += fmt.Sprintf(" seq %d", r.Seq)
		}
		where = append(where, loc)
	}
	if r.Witness != "" {
		where = append(where, "witness "+p(r.Witness))
	}
	head := "  [" + p(r.Rule) + "]"
	if len(where) > 0 {
		head += " " + strings.Join(where, " ")
	}
	fmt.Fprintln(b, head)
	fmt.Fprintf(b, "      %s\n", p(r.Message))
	if r.Field != "" || r.Claimed != "" || r.Recomputed != "" {
		fmt.Fprintf(b, "      %s: claimed %s, recomputed %s\n", p(orDefault(r.Field, "value")), quoteOrNone(r.Claimed), quoteOrNone(r.Recomputed))
	}
}

func quoteOrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return fmt.Sprintf("%q", s)
}
