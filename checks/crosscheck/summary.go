package crosscheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// witnessSummary counts what the cross-checks confirmed.
type witnessSummary struct {
	orderGTIDs  []binlog.GTID
	orderWrites []int
	rolledBack  int
	answers     int
	claims      int
	// claimWaits are the intents whose wait for a polling relay was
	// judged (witness-claim-wait), longestWait the longest of them.
	claimWaits        int
	longestWait       time.Duration
	marks             int
	zeroMarks         int
	leases            int
	effectTx          int
	rejects           int
	rolledBackEffects int
	// unknownCommits are effect commits of unknown outcome that did not
	// commit; unknownCommitted the GTIDs of those that did.
	unknownCommits   int
	unknownCommitted []binlog.GTID
	published        []recordKey
	unknownLanded    []recordKey
	unknownLost      int
	received         int
	offsets          []string
}

func (w *witnessSummary) orderTx(tx *binlog.Transaction, writes int) {
	w.orderGTIDs = append(w.orderGTIDs, tx.GTID)
	w.orderWrites = append(w.orderWrites, writes)
}

// line renders the summary, a clause per boundary.
func (w *witnessSummary) line(s *scenarioCheck) string {
	var db, bk string
	switch {
	case s.db == nil:
		db = "database: not witnessed"
	default:
		db = joinNonEmpty(w.commit(), w.outbox(), w.ack())
		if db == "" {
			db = "database: no write but the setup and seeds"
		}
	}
	if s.log == nil {
		if len(s.sc.Topics) > 0 {
			bk = "broker: not witnessed"
		}
	} else {
		bk = w.broker()
	}
	return joinNonEmpty(db, bk)
}

func (w *witnessSummary) commit() string {
	var parts []string
	if n := len(w.orderGTIDs); n > 0 {
		lo, hi := slices.Min(w.orderWrites), slices.Max(w.orderWrites)
		writes := fmt.Sprintf("%d", lo)
		if lo != hi {
			writes = fmt.Sprintf("%d-%d", lo, hi)
		}
		gtid := "GTID " + w.orderGTIDs[0].String()
		if n > 1 {
			gtid = fmt.Sprintf("GTIDs %s..%d", w.orderGTIDs[0], w.orderGTIDs[n-1].Seq)
		}
		parts = append(parts, fmt.Sprintf("%s of %s row writes, %s", plural(n, "transaction", "transactions"), writes, gtid))
	}
	if w.rolledBack > 0 {
		parts = append(parts, plural(w.rolledBack, "rolled-back request", "rolled-back requests")+" with no transaction")
	}
	if w.answers > 0 {
		parts = append(parts, plural(w.answers, "answer", "answers")+" as stored")
	}
	if len(parts) == 0 {
		return ""
	}
	return "commit boundary: " + strings.Join(parts, ", ")
}

func (w *witnessSummary) outbox() string {
	var parts []string
	if w.claims > 0 {
		parts = append(parts, plural(w.claims, "claim", "claims"))
	}
	if w.marks > 0 {
		parts = append(parts, plural(w.marks, "mark", "marks"))
	}
	if w.zeroMarks > 0 {
		parts = append(parts, plural(w.zeroMarks, "0-row mark", "0-row marks")+" with no change")
	}
	if w.leases > 0 {
		parts = append(parts, plural(w.leases, "lease expiry", "lease expiries"))
	}
	if w.claimWaits > 0 {
		parts = append(parts, fmt.Sprintf("%s for an idle polling relay, the longest %v",
			plural(w.claimWaits, "claim wait", "claim waits"), w.longestWait.Round(time.Millisecond)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "outbox CAS: " + strings.Join(parts, ", ")
}

func (w *witnessSummary) ack() string {
	var parts []string
	if w.effectTx > 0 {
		parts = append(parts, plural(w.effectTx, "transaction", "transactions")+" inbox+notification")
	}
	if w.rejects > 0 {
		parts = append(parts, plural(w.rejects, "rejected duplicate", "rejected duplicates")+" with no row change")
	}
	if w.rolledBackEffects > 0 {
		parts = append(parts, plural(w.rolledBackEffects, "rolled-back effect", "rolled-back effects")+" with no row change")
	}
	if n := w.unknownCommits + len(w.unknownCommitted); n > 0 {
		u := fmt.Sprintf("%s: %d committed", plural(n, "commit of unknown outcome", "commits of unknown outcome"), len(w.unknownCommitted))
		for _, g := range w.unknownCommitted {
			u += " (GTID " + g.String() + ")"
		}
		parts = append(parts, u)
	}
	if len(parts) == 0 {
		return ""
	}
	return "ack: " + strings.Join(parts, ", ")
}

func (w *witnessSummary) broker() string {
	var parts []string
	if len(w.published) > 0 {
		parts = append(parts, fmt.Sprintf("%s at %s", plural(len(w.published), "record", "records"), offsetRanges(w.published)))
	}
	if n := len(w.unknownLanded) + w.unknownLost; n > 0 {
		u := fmt.Sprintf("%s: %d landed", plural(n, "unknown outcome", "unknown outcomes"), len(w.unknownLanded))
		if len(w.unknownLanded) > 0 {
			u += " (" + offsetRanges(w.unknownLanded) + ")"
		}
		parts = append(parts, u)
	}
	if len(w.offsets) > 0 {
		parts = append(parts, "group offsets "+strings.Join(w.offsets, ","))
	}
	if len(parts) == 0 {
		return ""
	}
	return "publish: " + strings.Join(parts, ", ")
}

// offsetRanges renders records as "p0 offsets 0-1" (one topic per
// scenario is the rule; a second one is named).
func offsetRanges(ks []recordKey) string {
	type tp struct {
		t string
		p int32
	}
	by := map[tp][]int64{}
	var order []tp
	for _, k := range ks {
		key := tp{k.topic, k.partition}
		if _, ok := by[key]; !ok {
			order = append(order, key)
		}
		by[key] = append(by[key], k.offset)
	}
	slices.SortStableFunc(order, func(a, b tp) int {
		if a.t != b.t {
			return strings.Compare(a.t, b.t)
		}
		return int(a.p - b.p)
	})
	var parts []string
	for i, key := range order {
		offs := by[key]
		slices.Sort(offs)
		var rs []string
		for j := 0; j < len(offs); {
			k := j
			for k+1 < len(offs) && offs[k+1] == offs[k]+1 {
				k++
			}
			if k == j {
				rs = append(rs, fmt.Sprint(offs[j]))
			} else {
				rs = append(rs, fmt.Sprintf("%d-%d", offs[j], offs[k]))
			}
			j = k + 1
		}
		label := fmt.Sprintf("p%d", key.p)
		if i > 0 && key.t != order[0].t {
			label = key.t + " " + label
		}
		word := "offsets"
		if len(offs) == 1 {
			word = "offset"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", label, word, strings.Join(rs, ",")))
	}
	return strings.Join(parts, "; ")
}
