package model

import (
	"slices"
)

// Unknown outcomes of a generated request under faults (the generated
// load inside chaos). A request that got no answer (the client's record
// has no status: it names the transport error instead) or a 5xx while the
// nemesis struck may or may not have committed. The model does not guess:
//
//   - the request itself is not judged (under faults; without any nemesis
//     fault a request without an answer is off the contract, which answers
//     every request, and a 5xx is judged as any answer);
//   - a valid request of a (principal, key) that has no record yet becomes
//     a candidate of that key's record (contractState.uncertain);
//   - while a key has candidates and no record, a later request of it may
//     get what a fresh request may (placeAnswers), a 422 when a candidate
//     differs from it (that candidate may be the stored request), or a 409
//     (a request the client gave up on may still be in flight at the
//     service); a 201 settles the key: its order must be this request's
//     (a fresh one, or the stored answer of an equal candidate);
//   - at the end, an order committed under such a key that no answer
//     named is allowed when its lines are a candidate's (and is held to
//     that candidate: its principal, prices and amount); any other order
//     is still one "no allowed answer created".
//
// Orders of principals no generated request used (the chaos load's own,
// user-N) are not the contract's business when the scenario also has
// requests that are not generated.

// maxUncertain caps the candidates kept per key.
const maxUncertain = 64

// underFaults tells whether the nemesis struck in this scenario.
func (m *Model) underFaults() bool { return len(m.windows) > 0 }

// outcomeUnknown handles r when its outcome is unknown (no answer, or a
// 5xx under faults) and says so; else it returns false and r is judged as
// an answer.
func (m *Model) outcomeUnknown(r *ClientRequest, st *contractState, off func(string, ...any)) bool {
	if r.Status != 0 && (r.Status < 500 || !m.underFaults()) {
		return false
	}
	if !m.underFaults() {
		off("got no answer, and no fault was injected: the contract answers every request")
		return true
	}
	principal, ok := r.contractPrincipal()
	if !ok {
		return true
	}
	key, ok := contractKey(r.Raw.Keys)
	if !ok {
		return true
	}
	order, err := contractBody(r.Raw.Body)
	if err != nil {
		return true
	}
	pk := principal + "\x00" + key
	st.keyOf[pk] = true
	st.principals[principal] = true
	if st.records[pk] == nil && len(st.uncertain[pk]) < maxUncertain {
		st.uncertain[pk] = append(st.uncertain[pk], order)
	}
	return true
}

// uncertainStep judges r, a valid request of key pk, which has candidates
// and no record.
func (m *Model) uncertainStep(r *ClientRequest, st *contractState, pk, principal string, order contractOrder,
	off func(string, ...any), truncated bool) {
	allowed := append(m.placeAnswers(order), 409)
	if slices.ContainsFunc(st.uncertain[pk], func(c contractOrder) bool { return !c.equal(order) }) {
		allowed = append(allowed, 422)
	}
	if !slices.Contains(allowed, r.Status) {
		off("answered %d, the contract allows %s (a request of this key before had no answer)", r.Status, statusText(allowed))
		return
	}
	if r.Status == 201 {
		m.acceptCreated(r, st, pk, principal, order, off, truncated)
	}
}

// acceptCreated takes a 201 answer to a valid request of key pk, which
// had no record: the order it names becomes the key's record, and its
// candidates (uncertainStep) are settled; an answer naming no order, or
// one another request created, is off the contract.
func (m *Model) acceptCreated(r *ClientRequest, st *contractState, pk, principal string, order contractOrder,
	off func(string, ...any), truncated bool) {
	switch {
	case r.OrderID == nil:
		off("answered 201 without an order")
		return
	case st.created[*r.OrderID] != "":
		off("answered 201 with order %d, which another request created", *r.OrderID)
		return
	}
	st.records[pk] = &keyRecord{req: order, orderID: *r.OrderID, answer: r.BodySHA256}
	delete(st.uncertain, pk)
	st.created[*r.OrderID] = pk
	m.contractOrder(*r.OrderID, principal, order, r.src, truncated)
}

// createdUnanswered tells whether o, which no answer named, is one a
// request of unknown outcome may have created: its key has candidates
// and its lines are one's, to which it is then held.
func (m *Model) createdUnanswered(o *Order, st *contractState, truncated bool) bool {
	if _, ok := st.created[o.ID]; ok {
		return false
	}
	pk := o.Principal + "\x00" + o.Key
	got := make([]contractLine, len(o.LineList))
	for i, l := range o.LineList {
		got[i] = contractLine{SKU: l.SKU, Quantity: l.Quantity}
	}
	for _, c := range st.uncertain[pk] {
		if o.LineList != nil && slices.Equal(got, c.Lines) {
			m.contractOrder(o.ID, o.Principal, c, o.src, truncated)
			return true
		}
	}
	return false
}

// otherPrincipals are the principals of orders the contract leaves out:
// when the scenario has requests that are not generated, every principal
// no generated request used.
func (m *Model) otherPrincipals(st *contractState) map[string]bool {
	mixed := slices.ContainsFunc(m.clientReqs, func(r ClientRequest) bool { return r.Raw == nil })
	if !mixed {
		return nil
	}
	out := map[string]bool{}
	for i := range m.orders {
		if p := m.orders[i].Principal; !st.principals[p] {
			out[p] = true
		}
	}
	return out
}
