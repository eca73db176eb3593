package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The business layer, held against the client's own record of each
// request (order_request, written by the scenario driver once the answer
// arrived): whatever the order service logged, what it answered must be
// right for what it was sent. A bad token gets 401 (bad-token-accepted);
// a 2xx answer names an order that committed (created-on-rollback), that
// its own principal committed (cross-principal-answer), with the lines
// that were asked for (lines-mismatch).

// tokenSkew is how far the verifier lets a token's exp lie before the
// client's record of the answer and still counts it as possibly live:
// the service decided a moment before the client wrote its record.
const tokenSkew = 2 * time.Second

// stepOrderRequest: the client's record of one request and its answer.
func (m *Model) stepOrderRequest(e *evidence.Event, src Source) {
	m.nClientReqs++
	r := ClientRequest{Principal: m.intern(e.Principal), Key: strings.Clone(e.Key), Status: int64(e.Status),
		OrderID: clonePtr(e.OrderID), BodySHA256: strings.Clone(e.PayloadSHA256), src: src}
	for _, s := range e.Lines[:min(len(e.Lines), maxOrderLines)] {
		if l, err := evidence.ParseOrderLine(s); err == nil {
			l.SKU = m.intern(l.SKU)
			r.Lines = append(r.Lines, l)
		}
	}
	if e.TokenAlg != "" || e.TokenKey != "" || e.TokenClaims != "" {
		r.Token = &SentToken{Alg: m.intern(e.TokenAlg), Key: m.intern(e.TokenKey), Claims: strings.Clone(e.TokenClaims)}
	}
	if e.HasRawRequest() {
		r.Raw = &RawRequest{Auth: strings.Clone(e.AuthPrefix), Body: strings.Clone(e.RequestBody)}
		for _, k := range e.KeyHeaders {
			r.Raw.Keys = append(r.Raw.Keys, strings.Clone(k))
		}
	}
	m.clientStatus[r.Status]++
	if r.Status >= 200 && r.Status <= 299 && r.OrderID != nil && len(m.clientOKOrders) < maxClientRequests {
		m.clientOKOrders[*r.OrderID] = true
	}
	r.BadToken = badToken(r.Token, e.Time)
	if r.BadToken != "" && r.Status != 401 && r.Status != 0 { // 0: no answer (the client names the transport error)
		m.violate(RuleBadTokenAccepted, src, "", "a request with %s was answered %d, not 401", r.BadToken, r.Status)
	}
	if len(m.clientReqs) < maxClientRequests {
		m.clientReqs = append(m.clientReqs, r)
	}
}

// tokenClaims are the claims of a sent token the policy reads.
type tokenClaims struct {
	Sub string          `json:"sub"`
	Iss string          `json:"iss"`
	Aud json.RawMessage `json:"aud"`
	Exp *float64        `json:"exp"`
	Nbf *float64        `json:"nbf"`
}

// badToken says why the order service's token policy (spec.TokenAlg,
// TokenIssuer, TokenAudience: signed by the service's key, exp present
// and not passed, nbf passed) refuses tok, sent at about at ("" when it
// accepts it). A token that expired less than tokenSkew before at is
// given the benefit of the doubt.
func badToken(tok *SentToken, at time.Time) string {
	if tok == nil {
		return "no token"
	}
	if tok.Alg != spec.TokenAlg {
		return fmt.Sprintf("a token of alg %q", tok.Alg)
	}
	if tok.Key != "service" {
		return fmt.Sprintf("a token signed by another key (%q)", tok.Key)
	}
	var c tokenClaims
	if err := json.Unmarshal([]byte(tok.Claims), &c); err != nil {
		return "a token whose claims are not a JSON object"
	}
	sec := func(f float64) time.Time { return time.Unix(0, int64(f*1e9)) }
	switch {
	case c.Sub == "":
		return "a token without a subject"
	case !principalOK(c.Sub):
		return fmt.Sprintf("a token whose subject has %d bytes, over %d", len(c.Sub), spec.MaxPrincipalBytes)
	case c.Exp == nil:
		return "a token without exp"
	case !sec(*c.Exp).After(at.Add(-tokenSkew)):
		return "a token that expired at " + sec(*c.Exp).UTC().Format(time.RFC3339)
	case c.Nbf != nil && sec(*c.Nbf).After(at):
		return "a token not valid before " + sec(*c.Nbf).UTC().Format(time.RFC3339)
	case c.Iss != spec.TokenIssuer:
		return fmt.Sprintf("a token of issuer %q", c.Iss)
	case !audienceHas(c.Aud, spec.TokenAudience):
		return fmt.Sprintf("a token of audience %s", orNone(string(c.Aud)))
	}
	return ""
}

// audienceHas tells whether aud (a string or an array of strings) holds
// want.
func audienceHas(aud json.RawMessage, want string) bool {
	var one string
	if json.Unmarshal(aud, &one) == nil {
		return one == want
	}
	var many []string
	return json.Unmarshal(aud, &many) == nil && slices.Contains(many, want)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// checkAnswers (business, end of scenario): every 2xx answer the client
// got names an order that committed and was not only rolled back
// (created-on-rollback), that the client's own principal committed
// (cross-principal-answer), with the lines it asked for (lines-mismatch).
func (m *Model) checkAnswers(truncated bool) {
	for i := range m.clientReqs {
		r := &m.clientReqs[i]
		if r.Status < 200 || r.Status > 299 || r.OrderID == nil {
			continue
		}
		id := *r.OrderID
		o := m.orderOf(id)
		switch {
		case o == nil && m.rolledBackOrders[id]:
			m.report(truncated, RuleCreatedOnRollback, r.src, evidence.EventIDFor(id),
				"the client got %d for order %d, whose transaction rolled back", r.Status, id)
			continue
		case o == nil:
			m.report(truncated, RuleCreatedOnRollback, r.src, evidence.EventIDFor(id),
				"the client got %d for order %d, which no order_committed created", r.Status, id)
			continue
		}
		if o.Principal != "" && r.Principal != "" && o.Principal != r.Principal {
			m.report(truncated, RuleCrossPrincipalAnswer, r.src, evidence.EventIDFor(id),
				"%s (key %q) got order %d, which %s committed", r.Principal, r.Key, id, o.Principal)
		}
		if r.Lines != nil && o.LineList != nil && !sameLines(r.Lines, o.LineList) {
			m.report(truncated, RuleLinesMismatch, r.src, evidence.EventIDFor(id),
				"the client asked for %s and got order %d of %s", lineText(r.Lines), id, lineText(o.LineList))
		}
	}
}

// sameLines compares lines by SKU and quantity, in order.
func sameLines(a, b []evidence.OrderLine) bool {
	return slices.EqualFunc(a, b, func(x, y evidence.OrderLine) bool { return x.SKU == y.SKU && x.Quantity == y.Quantity })
}

func lineText(ls []evidence.OrderLine) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%d x %s", l.Quantity, l.SKU)
	}
	return strings.Join(parts, ", ")
}
