package model

import (
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The scenario harness's events: what the scenario driver seeded,
// observed, injected and queried, rather than what the system under test
// did. Their rules (fault-undeclared, fault-mismatch, observe-mismatch at
// the end) hold whatever the system under test is, and are filed under the
// delivery layer (rules.go).

// stepSeedStock: the scenario set the stock of a SKU.
func (m *Model) stepSeedStock(e *evidence.Event, _ Source) {
	sku := m.intern(e.SKU)
	if _, ok := m.seedStock[sku]; !ok {
		m.seedStock[sku] = val(e.Stock)
		m.skus = append(m.skus, sku)
	}
	if e.PriceCents != nil {
		m.seedPrice[sku] = *e.PriceCents
	}
	m.stock[sku] = val(e.Stock)
}

// stepSeedOutbox: the scenario inserted an outbox row directly (a decoy
// when its aggregate is -1).
func (m *Model) stepSeedOutbox(e *evidence.Event, src Source) {
	agg := val(e.OrderID)
	in := m.newIntent(e.EventID, agg, src)
	if in == nil {
		return
	}
	in.state = stateName(e.State)
	in.claimVersion = val(e.ClaimVersion)
	in.decoy = agg == -1
	in.obs().seeded = &Observation{State: in.state, ClaimVersion: in.claimVersion, OrderID: evidence.Ptr(agg),
		PayloadSHA256: strings.Clone(e.PayloadSHA256)}
	if !in.decoy {
		m.setKeyIntent(in)
	}
}

// stepObserve: the scenario queried a row's state; Finish checks that
// the row held it.
func (m *Model) stepObserve(e *evidence.Event, src Source) {
	o := m.ev(e.EventID).obs()
	st := stateName(e.State)
	if n := len(o.states); (n == 0 || o.states[n-1] != st) && n < maxObservations {
		o.states = append(o.states, st)
	}
	var oid *int64
	if e.OrderID != nil {
		oid = evidence.Ptr(*e.OrderID)
	}
	o.lastObs = &Observation{State: st, ClaimVersion: val(e.ClaimVersion), OrderID: oid,
		PayloadSHA256: strings.Clone(e.PayloadSHA256)}
	if len(o.all) < maxObservations {
		o.all = append(o.all, observedAt{*o.lastObs, src})
	}
}

// stepFault: a fault was injected at a named point, at one of the points
// the scenario declares, about an event the history knows.
func (m *Model) stepFault(e *evidence.Event, src Source) {
	if !m.faultPoints[e.Point] {
		m.violate(RuleFaultUndeclared, src, e.EventID,
			"a fault was injected at %q, which the scenario does not declare", e.Point)
	}
	if e.EventID != "" && m.byID[e.EventID] == nil {
		m.violate(RuleFaultMismatch, src, e.EventID, "the fault at %s names %s, an event id no earlier event mentions", e.Point, e.EventID)
	} else if e.EventID != "" && e.ClaimVersion != nil {
		m.faultToken(e, src)
	}
	if len(m.faults) < maxFaults {
		m.faults = append(m.faults, strings.Clone(e.Point))
	}
	m.crashed[m.intern(e.Actor)] = true
	m.commitAtFault(e)
	m.countFault(e)
	m.noteProof(e)
	m.noteWindow(e) // ownership.go
}

// stepInvariant: a live invariant query ran; the checker compares its
// rows with the evidence (the last event of an id counts).
func (m *Model) stepInvariant(e *evidence.Event, _ Source) {
	id := e.Invariant
	if _, ok := m.invariants[id]; !ok {
		if len(m.invOrder) >= maxInvariants {
			return
		}
		id = strings.Clone(id)
		m.invOrder = append(m.invOrder, id)
	} else {
		id = m.invOrder[slices.Index(m.invOrder, id)] // the stored key, not the batch's bytes
	}
	m.invariants[id] = val(e.Rows)
}
