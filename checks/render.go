package checks

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// WriteText renders v for a person: the verdict, what was checked, every
// reason (failures first, each with where it was found and what differs),
// and the invariants compared.
func WriteText(w io.Writer, v *Verdict) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "orderflow-audit verify: %s%s\n", v.StatusLine(), auditedSuffix(v)) // proofrender.go
	fmt.Fprintf(b, "evidence   %s (run %s)\n", v.Evidence, v.RunID)
	if v.Planted != "" {
		fmt.Fprintf(b, "planted    %s (a negative control: this run is expected to FAIL)\n", v.Planted)
	}
	fmt.Fprintf(b, "checked    %d scenario(s), %d event(s); invariants on %s\n", v.Scenarios, v.Events, v.Engine)
	for _, u := range v.Unwitnessed {
		fmt.Fprintf(b, "unwitnessed %s (allowed by --allow-unwitnessed: the actors' word alone)\n", u)
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
				fmt.Fprintf(b, "  %-22s %-22s %8d %8s\n", c.Scenario, c.ID, c.Replayed, live)
			}
		}
	}
	if len(v.Resolved) > 0 {
		fmt.Fprintf(b, "\nunknown outcomes settled by the binlog witness (%d): transactions that committed and that no actor logged\n", len(v.Resolved))
		for _, r := range v.Resolved {
			fmt.Fprintf(b, "  %s gtid %s: %s\n", r.Scenario, r.GTID, r.What)
		}
	}
	for _, wng := range v.Warnings {
		fmt.Fprintf(b, "\nwarning: %s\n", wng)
	}
	return b.Flush()
}

func writeReason(b *bufio.Writer, r Reason) {
	where := []string{}
	if r.Scenario != "" {
		where = append(where, r.Scenario)
	}
	if r.Log != "" {
		loc := r.Log
		if r.Line > 0 {
			loc += fmt.Sprintf(":%d", r.Line)
		}
		if r.Seq > 0 {
			loc += fmt.Sprintf(" seq %d", r.Seq)
		}
		where = append(where, loc)
	}
	if r.Witness != "" {
		where = append(where, "witness "+r.Witness)
	}
	head := "  [" + r.Rule + "]"
	if len(where) > 0 {
		head += " " + strings.Join(where, " ")
	}
	fmt.Fprintln(b, head)
	fmt.Fprintf(b, "      %s\n", r.Message)
	if r.Field != "" || r.Claimed != "" || r.Recomputed != "" {
		fmt.Fprintf(b, "      %s: claimed %s, recomputed %s\n", orDefault(r.Field, "value"), quoteOrNone(r.Claimed), quoteOrNone(r.Recomputed))
	}
}

func quoteOrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return fmt.Sprintf("%q", s)
}
