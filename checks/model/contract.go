package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The reference model of the order service's contract (spec/orderapi.go),
// held to the client's record of a generated load (order_request with
// request_body, runner/genload): from what was sent and the stock seeded
// it predicts the answers a request may get and the order it may write,
// and holds the answers (answer-off-contract) and the committed orders
// (write-off-contract) to that.
//
// Concurrency. The load's discipline makes the check simple and
// sufficient: each principal is one client sending one request at a time,
// so the requests of one (principal, key) are totally ordered by the
// client's record, and whether a key has a record is known at each step.
// Requests of different principals share only stock, which only falls:
// a 409 for stock is allowed when some line's SKU ended below the line's
// quantity (were it never below, no moment of the request saw too
// little); a 201 whatever the stock, and the orders the model allows must
// not take more of a SKU than was seeded. The check accepts every
// linearizable outcome of such a load; for stock it accepts some that are
// not (a 409 answered before the stock fell).

// RawRequest is what a generated request sent, raw.
type RawRequest struct {
	Auth string   // the Authorization header before the token (or whole)
	Keys []string // the Idempotency-Key values
	Body string
}

// keyRecord is what the model holds for a (principal, key) that created
// an order: the request and the answer.
type keyRecord struct {
	req     contractOrder
	orderID int64
	answer  string // sha256 of the first answer's body
}

// contractState is the model's state while it walks the client's record.
type contractState struct {
	records map[string]*keyRecord // principal "\x00" key
	created map[int64]string      // order id -> its (principal, key)
	keyOf   map[string]bool       // every (principal, key) a valid request used
	// uncertain holds, per (principal, key) without a record, the valid
	// requests whose outcome is unknown (no answer, or a 5xx under
	// faults): each may have created the key's order (unknown.go).
	uncertain map[string][]contractOrder
	// principals are those of the generated requests the contract read.
	principals map[string]bool
}

// checkContract (business, end of scenario) walks the generated requests
// in the client's order.
func (m *Model) checkContract(truncated bool) {
	st := contractState{records: map[string]*keyRecord{}, created: map[int64]string{}, keyOf: map[string]bool{},
		uncertain: map[string][]contractOrder{}, principals: map[string]bool{}}
	generated := false
	for i := range m.clientReqs {
		if r := &m.clientReqs[i]; r.Raw != nil {
			generated = true
			m.contractStep(r, &st, truncated)
		}
	}
	if generated {
		m.contractWrites(&st, truncated)
	}
}

// contractStep predicts the answers r may get and holds its answer to
// them.
func (m *Model) contractStep(r *ClientRequest, st *contractState, truncated bool) {
	off := func(format string, args ...any) {
		m.report(truncated, RuleAnswerOffContract, r.src, "", "%s: "+format, append([]any{r.describe()}, args...)...)
	}
	if m.outcomeUnknown(r, st, off) {
		return
	}
	principal, ok := r.contractPrincipal()
	if !ok {
		if r.Status != 401 {
			off("answered %d, the contract says 401 (authorization)", r.Status)
		}
		return
	}
	key, ok := contractKey(r.Raw.Keys)
	if !ok {
		if r.Status != 400 {
			off("answered %d, the contract says 400 (Idempotency-Key)", r.Status)
		}
		return
	}
	order, err := contractBody(r.Raw.Body)
	if err != nil {
		want := int64(400)
		if err == errTooLarge {
			want = 413
		}
		if r.Status != want {
			off("answered %d, the contract says %d (body: %v)", r.Status, want, err)
		}
		return
	}
	pk := principal + "\x00" + key
	st.keyOf[pk] = true
	st.principals[principal] = true
	if _, ok := st.uncertain[pk]; ok && st.records[pk] == nil {
		m.uncertainStep(r, st, pk, principal, order, off, truncated)
		return
	}
	if rec := st.records[pk]; rec != nil {
		switch {
		case !order.equal(rec.req):
			if r.Status != 422 {
				off("answered %d, the contract says 422 (the key was used with another request)", r.Status)
			}
		case r.Status != 201 || r.OrderID == nil || *r.OrderID != rec.orderID:
			off("answered %d naming order %s, the contract says the stored answer: 201 naming order %d", r.Status, idText(r.OrderID), rec.orderID)
		case r.BodySHA256 != "" && rec.answer != "" && r.BodySHA256 != rec.answer:
			off("replayed order %d in other bytes than its first answer", rec.orderID)
		}
		return
	}
	allowed := m.placeAnswers(order)
	if !slices.Contains(allowed, r.Status) {
		off("answered %d, the contract allows %s", r.Status, statusText(allowed))
		return
	}
	if r.Status == 201 {
		m.acceptCreated(r, st, pk, principal, order, off, truncated)
	}
}

// placeAnswers are the answers the contract allows a valid request with
// no record: 404 for an unknown SKU, 409 for a SKU that ended below its
// line's quantity, 500 for an amount past int64, 201 when no SKU is
// unknown and the amount fits.
func (m *Model) placeAnswers(o contractOrder) []int64 {
	var out []int64
	unknown, short := false, false
	var sum int64
	overflow := false
	for _, l := range o.Lines {
		price, known := m.seedPrice[l.SKU]
		if _, stocked := m.seedStock[l.SKU]; !stocked || !known {
			unknown = true
			continue
		}
		if m.stock[l.SKU] < l.Quantity {
			short = true
		}
		s, ok := mulAdd(sum, l.Quantity, price)
		overflow = overflow || !ok
		sum = s
	}
	if unknown {
		out = append(out, 404)
	}
	if short {
		out = append(out, 409)
	}
	if overflow {
		out = append(out, 500)
	}
	if !unknown && !overflow {
		out = append(out, 201)
	}
	return out
}

// contractOrder holds the order a 201 created to the request: its
// principal, its lines in order, each at its seeded price, and its amount.
func (m *Model) contractOrder(id int64, principal string, req contractOrder, src Source, truncated bool) {
	o := m.orderOf(id)
	if o == nil {
		return // created-on-rollback says it
	}
	off := func(format string, args ...any) {
		m.report(truncated, RuleWriteOffContract, src, evidence.EventIDFor(id), "order %d: "+format, append([]any{id}, args...)...)
	}
	if o.Principal != principal {
		off("committed for %q, the request's principal is %q", o.Principal, principal)
	}
	var want int64
	for _, l := range req.Lines {
		want, _ = mulAdd(want, l.Quantity, m.seedPrice[l.SKU])
	}
	got := make([]contractLine, len(o.LineList))
	for i, l := range o.LineList {
		got[i] = contractLine{SKU: l.SKU, Quantity: l.Quantity}
		if p, ok := m.seedPrice[l.SKU]; ok && l.PriceCents != nil && *l.PriceCents != p {
			off("line %d priced %s at %d cents, seeded at %d", i+1, l.SKU, *l.PriceCents, p)
		}
	}
	if o.LineList != nil && !slices.Equal(got, req.Lines) {
		off("has lines %v, the request asked for %v", got, req.Lines)
	}
	if o.AmountCents == nil || *o.AmountCents != want {
		off("has amount %s, the request's lines at the seeded prices cost %d", idText(o.AmountCents), want)
	}
}

// contractWrites (end): every order committed for a principal of the
// load is one the model let a request create, and the orders it let be
// created took no more of a SKU than was seeded.
func (m *Model) contractWrites(st *contractState, truncated bool) {
	taken, last := map[string]int64{}, map[string]Source{}
	others := m.otherPrincipals(st)
	for i := range m.orders {
		o := &m.orders[i]
		if others[o.Principal] {
			continue // an order of another load's principal (chaos's user-N)
		}
		if m.createdUnanswered(o, st, truncated) {
			st.created[o.ID] = o.Principal + "\x00" + o.Key
		}
		if _, ok := st.created[o.ID]; ok {
			for _, l := range o.LineList {
				taken[l.SKU] += l.Quantity
				last[l.SKU] = o.src
			}
			continue
		}
		m.report(truncated, RuleWriteOffContract, o.src, evidence.EventIDFor(o.ID),
			"order %d committed for %q (key %q), but no answer the contract allows created it", o.ID, o.Principal, o.Key)
	}
	skus := make([]string, 0, len(taken))
	for sku := range taken {
		skus = append(skus, sku)
	}
	sort.Strings(skus)
	for _, sku := range skus {
		if seeded, ok := m.seedStock[sku]; ok && taken[sku] > seeded {
			m.report(truncated, RuleWriteOffContract, last[sku], "",
				"the orders created took %d of %s, seeded with %d", taken[sku], sku, seeded)
		}
	}
}

// contractPrincipal is the principal the contract reads from r's
// Authorization header: "Bearer " and a token the policy accepts, whose
// subject may be a principal.
func (r *ClientRequest) contractPrincipal() (string, bool) {
	if !bearerToken(r.Raw.Auth, r.Token != nil) || r.BadToken != "" {
		return "", false
	}
	var c struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal([]byte(r.Token.Claims), &c) != nil || !principalOK(c.Sub) {
		return "", false
	}
	return c.Sub, true
}

// describe names a generated request in a message.
func (r *ClientRequest) describe() string {
	body := r.Raw.Body
	if len(body) > 80 {
		body = body[:80] + "..."
	}
	return fmt.Sprintf("the request of %s with Idempotency-Key %q and body %s", orNone(r.Principal), r.Raw.Keys, body)
}

func idText(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func statusText(s []int64) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, " or ")
}
