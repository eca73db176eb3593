package audit

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// windowCut cuts the binlog to the run window the evidence states, as it
// streams: keep says whether a transaction is in it (after
// window.binlog's start position, and in each replication domain up to
// its GTID in gtid_end; a domain gtid_end does not name began after the
// window). holes says, once the binlog was read to its end, where it does
// not reach from the window's start GTIDs to its end GTIDs, each hole in
// a sentence: a transaction the window should hold is not in the witness.
type windowCut struct {
	bw          evidence.BinlogWindow
	start       binlog.Position
	from, to    map[uint32]binlog.GTID
	first, last map[uint32]uint64
	bad         []string
}

func newWindowCut(bw evidence.BinlogWindow) *windowCut {
	w := &windowCut{bw: bw, start: binlog.Position{File: bw.StartFile, Pos: bw.StartPos},
		first: map[uint32]uint64{}, last: map[uint32]uint64{}}
	var errFrom, errTo error
	w.from, errFrom = gtidList(bw.GTIDStart)
	w.to, errTo = gtidList(bw.GTIDEnd)
	for _, err := range []error{errFrom, errTo} {
		if err != nil {
			w.bad = append(w.bad, "the run window's GTIDs cannot be read ("+err.Error()+"): where the window ends in the binlog is unknown")
		}
	}
	return w
}

// keep says whether t is in the window, and notes its GTID if it is.
func (w *windowCut) keep(t binlog.Transaction) bool {
	if !t.After(w.start) {
		return false
	}
	if len(w.to) > 0 && !t.GTID.IsZero() {
		end, ok := w.to[t.GTID.Domain]
		if !ok || t.GTID.Seq > end.Seq {
			return false // after the window
		}
	}
	if g := t.GTID; !g.IsZero() {
		if _, ok := w.first[g.Domain]; !ok {
			w.first[g.Domain] = g.Seq
		}
		w.last[g.Domain] = g.Seq
	}
	return true
}

// holes are the window's holes, once every transaction went through keep.
func (w *windowCut) holes() []string {
	bw, out := w.bw, slices.Clone(w.bad)
	for _, d := range domains(w.first, w.to) {
		begin := uint64(1) // gtid_start empty: the server had no transaction before
		if g, ok := w.from[d]; ok {
			begin = g.Seq + 1
		}
		f, seen := w.first[d]
		end, bounded := w.to[d]
		switch {
		case seen && f < begin:
			out = append(out, fmt.Sprintf("the binlog after %s:%d begins domain %d at sequence %d, which the run window's start %s puts before the window: "+
				"the window's start position and GTIDs disagree, so what it holds is unknown", bw.StartFile, bw.StartPos, d, f, orNone(bw.GTIDStart)))
		case seen && f > begin:
			out = append(out, fmt.Sprintf("the binlog after %s:%d begins domain %d at sequence %d, but the run window begins after %s: transactions %d..%d are missing",
				bw.StartFile, bw.StartPos, d, f, orNone(bw.GTIDStart), begin, f-1))
		case !seen && bounded && end.Seq >= begin:
			out = append(out, fmt.Sprintf("the run window ends at gtid %s, but the binlog after %s:%d holds no transaction of domain %d",
				end, bw.StartFile, bw.StartPos, d))
		case seen && bounded && w.last[d] < end.Seq:
			out = append(out, fmt.Sprintf("the binlog ends domain %d at sequence %d, but the run window ends at gtid %s: transactions %d..%d are missing (the witness was cut short)",
				d, w.last[d], end, w.last[d]+1, end.Seq))
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
