package model

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// TestCaps: each bound against hostile input keeps exactly its cap.
func TestCaps(t *testing.T) {
	for _, c := range []struct {
		name  string
		cap   int
		event func(i int) evidence.Event // the i-th of cap+1 events
		kept  func(m *Model) int
	}{
		{"requests", maxRequests, func(i int) evidence.Event { return ev(evidence.KindOrderRejected, "") },
			func(m *Model) int { return len(m.Requests()) }},
		{"faults", maxFaults, func(i int) evidence.Event { e := ev(evidence.KindFault, ""); e.Point = "p"; return e },
			func(m *Model) int { return len(m.Faults()) }},
		{"rolled back", maxRolledBack, func(i int) evidence.Event { return ev(evidence.KindOrderRolledBack, fmt.Sprint("e-", i)) },
			func(m *Model) int { return len(m.RolledBack()) }},
		{"invariants", maxInvariants, func(i int) evidence.Event {
			e := ev(evidence.KindInvariant, "")
			e.Invariant = strconv.Itoa(i)
			return e
		},
			func(m *Model) int {
				n := 0
				for range m.Invariants() {
					n++
				}
				return n
			}},
		{"observed states", maxObservations, func(i int) evidence.Event {
			e := ev(evidence.KindObserve, "e-1")
			e.State = []string{"PENDING", "CLAIMED"}[i%2]
			return e
		}, func(m *Model) int { return len(m.ObservedStates("e-1")) }},
		{"observations", maxObservations, func(i int) evidence.Event {
			e := ev(evidence.KindObserve, "e-1")
			e.State = "PENDING"
			return e
		}, func(m *Model) int { return len(m.byID["e-1"].all) }},
		{"interned", maxInterned, func(i int) evidence.Event { e := ev(evidence.KindSeedStock, ""); e.SKU = strconv.Itoa(i); return e },
			func(m *Model) int { return len(m.strs) }},
	} {
		m := New(nil, []string{"p"})
		for i := range c.cap + 1 {
			e := c.event(i)
			m.Step(&e, Source{Seq: int64(i + 1)})
		}
		if got := c.kept(m); got != c.cap {
			t.Errorf("%s: kept %d of %d; want %d", c.name, got, c.cap+1, c.cap)
		}
	}
}

// TestGroupCap: a record remembers maxGroups consumer groups; the commits
// of a group beyond them are reported offset-not-received.
func TestGroupCap(t *testing.T) {
	m := New(nil, nil)
	for g := range maxGroups + 1 {
		r := ev(evidence.KindReceive, "e-1")
		r.Topic, r.Partition, r.Offset, r.Consumer = "t", evidence.Ptr[int32](0), evidence.Ptr[int64](0), strconv.Itoa(g)
		c := ev(evidence.KindOffsetCommit, "")
		c.Topic, c.Partition, c.Offset, c.Consumer = "t", evidence.Ptr[int32](0), evidence.Ptr[int64](1), strconv.Itoa(g)
		e := ev(evidence.KindEffect, "e-1")
		e.NotificationID = evidence.Ptr(int64(g))
		step(m, r, e, c)
	}
	vs, _ := m.Violations()
	var notReceived []string
	for _, v := range vs {
		if v.Rule == RuleOffsetNotReceived {
			notReceived = append(notReceived, v.Message)
		}
	}
	if len(m.groups) != maxGroups || len(notReceived) != 1 {
		t.Errorf("%d groups kept, offset-not-received %q; want %d and one, for group %d", len(m.groups), notReceived, maxGroups, maxGroups)
	}
}

// TestDecrementCap: past maxDecrements stock writes of a SKU, the rest are
// not kept for stock-mismatch (their stock still counts).
func TestDecrementCap(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates maxDecrements entries")
	}
	m := New(nil, nil)
	seed := ev(evidence.KindSeedStock, "")
	seed.SKU, seed.Stock = "SKU", evidence.Ptr[int64](10)
	step(m, seed)
	m.decrements["SKU"] = make([]decrement, maxDecrements-1)
	for i := range 2 {
		o := ev(evidence.KindOrderCommitted, fmt.Sprint("e-", i))
		o.OrderID, o.SKU, o.Stock = evidence.Ptr(int64(i)), "SKU", evidence.Ptr(int64(9-i))
		o.Writes = []string{evidence.WriteStock, evidence.WriteOutbox}
		step(m, o)
	}
	if n := len(m.decrements["SKU"]); n != maxDecrements || m.StockOf("SKU") != 8 {
		t.Errorf("%d decrements kept, stock %d; want %d, 8", n, m.StockOf("SKU"), maxDecrements)
	}
}

// TestInboxConsumerCap: the model tells apart the effects of maxGroups
// inbox consumers; past them, one effect per event stands for all the
// others together, so a second one of a consumer past the cap is still a
// duplicate-effect.
func TestInboxConsumerCap(t *testing.T) {
	m := New(nil, nil)
	effect := func(consumer string, nid int64) evidence.Event {
		e := ev(evidence.KindEffect, "e-1")
		e.Consumer, e.NotificationID = consumer, evidence.Ptr(nid)
		return e
	}
	for c := range maxGroups + 1 {
		step(m, effect("c"+strconv.Itoa(c), int64(c)))
	}
	count := func() int {
		n := 0
		vs, _ := m.Violations()
		for _, v := range vs {
			if v.Rule == RuleDuplicateEffect {
				n++
			}
		}
		return n
	}
	if got := len(m.InboxConsumers()); got != maxGroups {
		t.Errorf("%d inbox consumers kept; want %d", got, maxGroups)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d duplicate-effect for one effect of each of %d consumers; want none", n, maxGroups+1)
	}
	step(m, effect("c"+strconv.Itoa(maxGroups), maxGroups+1))
	if n := count(); n != 1 {
		t.Errorf("%d duplicate-effect after a second effect of the consumer past the cap; want 1", n)
	}
	if !m.EffectBy("c0", "e-1") || m.EffectBy("c"+strconv.Itoa(maxGroups), "e-1") || m.EffectBy("c0", "e-2") {
		t.Errorf("EffectBy: c0 of e-1 %v, the consumer past the cap %v, c0 of e-2 %v; want true, false, false",
			m.EffectBy("c0", "e-1"), m.EffectBy("c"+strconv.Itoa(maxGroups), "e-1"), m.EffectBy("c0", "e-2"))
	}
}
