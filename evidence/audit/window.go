package audit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// window cuts h to the run window the evidence states: the transactions
// after window.binlog's start position, and in each replication domain up
// to its GTID in gtid_end (a domain gtid_end does not name began after
// the window). Where the binlog does not reach from the window's start
// GTIDs to its end GTIDs, a hole is said in a sentence: a transaction the
// window should hold is not in the witness.
func (r *reader) window(h binlog.History) *binlog.History {
	bw := r.out.Evidence.Window.Binlog
	start := binlog.Position{File: bw.StartFile, Pos: bw.StartPos}
	from, errFrom := gtidList(bw.GTIDStart)
	to, errTo := gtidList(bw.GTIDEnd)
	for _, err := range []error{errFrom, errTo} {
		if err != nil {
			r.out.Holes = append(r.out.Holes, "the run window's GTIDs cannot be read ("+err.Error()+"): where the window ends in the binlog is unknown")
		}
	}
	out := &binlog.History{Files: h.Files}
	first, last := map[uint32]uint64{}, map[uint32]uint64{}
	for _, t := range h.Transactions {
		if !t.After(start) {
			continue
		}
		if len(to) > 0 && !t.GTID.IsZero() {
			end, ok := to[t.GTID.Domain]
			if !ok || t.GTID.Seq > end.Seq {
				continue // after the window
			}
		}
		out.Transactions = append(out.Transactions, t)
		if g := t.GTID; !g.IsZero() {
			if _, ok := first[g.Domain]; !ok {
				first[g.Domain] = g.Seq
			}
			last[g.Domain] = g.Seq
		}
	}
	for _, d := range domains(first, to) {
		begin := uint64(1) // gtid_start empty: the server had no transaction before
		if g, ok := from[d]; ok {
			begin = g.Seq + 1
		}
		f, seen := first[d]
		end, bounded := to[d]
		switch {
		case seen && f < begin:
			r.out.Holes = append(r.out.Holes, fmt.Sprintf("the binlog after %s:%d begins domain %d at sequence %d, which the run window's start %s puts before the window: "+
				"the window's start position and GTIDs disagree, so what it holds is unknown", bw.StartFile, bw.StartPos, d, f, orNone(bw.GTIDStart)))
		case seen && f > begin:
			r.out.Holes = append(r.out.Holes, fmt.Sprintf("the binlog after %s:%d begins domain %d at sequence %d, but the run window begins after %s: transactions %d..%d are missing",
				bw.StartFile, bw.StartPos, d, f, orNone(bw.GTIDStart), begin, f-1))
		case !seen && bounded && end.Seq >= begin:
			r.out.Holes = append(r.out.Holes, fmt.Sprintf("the run window ends at gtid %s, but the binlog after %s:%d holds no transaction of domain %d",
				end, bw.StartFile, bw.StartPos, d))
		case seen && bounded && last[d] < end.Seq:
			r.out.Holes = append(r.out.Holes, fmt.Sprintf("the binlog ends domain %d at sequence %d, but the run window ends at gtid %s: transactions %d..%d are missing (the witness was cut short)",
				d, last[d], end, last[d]+1, end.Seq))
		}
	}
	return out
}

// gtidList parses @@gtid_binlog_pos ("0-1-5,1-1-9"; empty: none) by
// domain.
func gtidList(s string) (map[uint32]binlog.GTID, error) {
	out := map[uint32]binlog.GTID{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		g, err := binlog.ParseGTID(part)
		if err != nil {
			return nil, err
		}
		if _, dup := out[g.Domain]; dup {
			return nil, fmt.Errorf("gtid list %q names domain %d twice", s, g.Domain)
		}
		out[g.Domain] = g
	}
	return out, nil
}

func domains(seen map[uint32]uint64, to map[uint32]binlog.GTID) []uint32 {
	set := map[uint32]bool{}
	for d := range seen {
		set[d] = true
	}
	for d := range to {
		set[d] = true
	}
	out := make([]uint32, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func orNone(s string) string {
	if s == "" {
		return "an empty GTID state"
	}
	return "gtid " + s
}
