package checks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// liveInvariantEvents compares the invariant events of the logs with the
// live results the evidence lists.
func (c *checker) liveInvariantEvents(sc *evidence.Scenario, m *Model, truncated bool) {
	live := map[string]int64{}
	for _, r := range sc.Invariants {
		if _, dup := live[r.ID]; dup {
			c.fail(sc.ID, "invariant-duplicate", "the live result of invariant %s is listed twice", r.ID)
		}
		live[r.ID] = r.Rows
	}
	for id, rows := range m.Invariants() {
		l, ok := live[id]
		switch {
		case !ok:
			c.mismatch(sc.ID, "invariant-log-mismatch", id, "", strconv.FormatInt(rows, 10),
				"the log records invariant %s = %d, but the evidence lists no live result for it", id, rows)
		case l != rows:
			c.mismatch(sc.ID, "invariant-log-mismatch", id, strconv.FormatInt(l, 10), strconv.FormatInt(rows, 10),
				"the evidence says invariant %s returned %d live rows; the invariant event in the log says %d", id, l, rows)
		}
	}
	for _, r := range sc.Invariants {
		if _, ok := m.Invariant(r.ID); !ok {
			if truncated {
				c.inconclusive(sc.ID, "invariant-log-missing", "no invariant event for %s: a log was cut", r.ID)
			} else {
				c.mismatch(sc.ID, "invariant-log-missing", r.ID, strconv.FormatInt(r.Rows, 10), "",
					"the evidence lists a live result for invariant %s that no invariant event records", r.ID)
			}
		}
	}
}

// sqlChecks loads the replayed end state, runs every invariant and digests
// every table, and compares them with the evidence. It returns the
// replayed invariant results (nil when SQL could not run).
func (c *checker) sqlChecks(ctx context.Context, sc *evidence.Scenario, m *Model) map[string]int64 {
	// The digests are computed from the replayed rows on another core
	// while the SQL engine loads the tables the invariants read.
	srcs := sources(m)
	digests := make([]evidence.TableDigest, len(srcs))
	legacy := make([]*evidence.TableDigest, len(srcs))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i, s := range srcs {
			digests[i] = digestSource(s)
			if s.spec.Legacy != nil {
				d := digestSource(s.project(s.spec.Legacy))
				legacy[i] = &d
			}
		}
	})
	defer wg.Wait()
	if err := c.eng.reset(ctx); err != nil {
		c.inconclusive(sc.ID, "sql-engine", "the replayed state could not be loaded: %v", err)
		return nil
	}
	if err := c.eng.load(ctx, usedTables(srcs, c.invs)); err != nil {
		c.inconclusive(sc.ID, "sql-engine", "the replayed state could not be loaded: %v", err)
		return nil
	}
	out := c.replayedInvariants(ctx, sc)
	if out == nil {
		return nil
	}
	wg.Wait()
	c.tableDigests(sc, digests, legacy)
	return out
}

// replayedInvariants runs every invariant on the loaded end state and
// compares it with the live result; nil when one could not run.
func (c *checker) replayedInvariants(ctx context.Context, sc *evidence.Scenario) map[string]int64 {
	id := sc.ID
	live := map[string]int64{}
	for _, r := range sc.Invariants {
		live[r.ID] = r.Rows
	}
	known := map[string]bool{}
	out := map[string]int64{}
	for _, inv := range c.invs {
		known[inv.ID] = true
		n, err := c.eng.countInvariant(ctx, inv)
		if err != nil {
			c.inconclusive(id, "sql-engine", "invariant %s could not run on the replayed state: %v", inv.ID, err)
			return nil
		}
		out[inv.ID] = n
		l, has := live[inv.ID]
		chk := InvariantCheck{Scenario: id, ID: inv.ID, Meaning: inv.Meaning, Live: -1, Replayed: n}
		if has {
			chk.Live = l
		}
		c.v.Invariants = append(c.v.Invariants, chk)
		if n > 0 {
			c.endState(Reason{Rule: inv.ID, Status: Fail, Scenario: id, Field: inv.ID, Recomputed: strconv.FormatInt(n, 10),
				Message: fmt.Sprintf("%d row(s) on the replayed end state. %s", n, inv.Meaning)})
		}
		switch {
		case !has && sc.Status != evidence.StatusNotRun:
			c.inconclusive(id, "invariant-not-recorded", "the evidence has no live result for invariant %s", inv.ID)
		case has && l != n:
			c.endState(Reason{Rule: "invariant-mismatch", Status: Fail, Scenario: id, Field: inv.ID,
				Claimed: strconv.FormatInt(l, 10), Recomputed: strconv.FormatInt(n, 10),
				Message: fmt.Sprintf("invariant %s returned %d row(s) live but %d on the replayed end state", inv.ID, l, n)})
		}
	}
	for _, r := range sc.Invariants {
		if !known[r.ID] {
			c.inconclusive(id, "invariant-unknown", "the evidence lists invariant %s, which the verifier does not have", r.ID)
		}
	}
	return out
}

// tableDigests compares the digests of the replayed tables (in the order
// of evidence.DigestSpecs) with the live ones the evidence lists. A live
// digest over a table's legacy columns (evidence of a version before the
// business columns) is accepted with a warning: those columns were not
// compared.
func (c *checker) tableDigests(sc *evidence.Scenario, digests []evidence.TableDigest, legacy []*evidence.TableDigest) {
	id := sc.ID
	claimed := map[string]evidence.TableDigest{}
	for _, t := range sc.Tables {
		if _, dup := claimed[t.Table]; dup {
			c.fail(id, "table-duplicate", "table %s is digested twice", t.Table)
		}
		claimed[t.Table] = t
	}
	specs := map[string]bool{}
	for i, spec := range evidence.DigestSpecs {
		specs[spec.Table] = true
		d := digests[i]
		t, ok := claimed[spec.Table]
		switch {
		case !ok && sc.Status != evidence.StatusNotRun:
			c.inconclusive(id, "table-not-recorded", "the evidence has no digest of table %s", spec.Table)
		case ok && legacy[i] != nil && (t.Rows != d.Rows || t.SHA256 != d.SHA256) &&
			t.Rows == legacy[i].Rows && t.SHA256 == legacy[i].SHA256:
			c.v.Warnings = append(c.v.Warnings, fmt.Sprintf("%s: table %s is digested over the columns of an older version (%s): %s not compared",
				id, spec.Table, strings.Join(spec.Legacy, ", "), strings.Join(spec.Columns[len(spec.Legacy):], ", ")))
		case ok && (t.Rows != d.Rows || t.SHA256 != d.SHA256):
			c.endState(Reason{Rule: "table-digest", Status: Fail, Scenario: id, Field: spec.Table,
				Claimed: digestText(t), Recomputed: digestText(d),
				Message: fmt.Sprintf("table %s: the live digest differs from the replayed end state (%d live rows, %d replayed)",
					spec.Table, t.Rows, d.Rows)})
		}
	}
	for _, t := range sc.Tables {
		if !specs[t.Table] {
			c.inconclusive(id, "table-unknown", "the evidence digests table %s, which the verifier does not replay", t.Table)
		}
	}
}

func digestText(d evidence.TableDigest) string {
	return fmt.Sprintf("%d rows, sha256 %s", d.Rows, d.SHA256)
}
