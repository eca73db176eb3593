package genload

import (
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Token is a bearer token as generated: its alg header, the key that
// signs it ("service", "other", "none", as order_request's token_key
// names them) and its claims, any JSON (a claim may be absent or of the
// wrong type). The runner signs it.
type Token struct {
	Alg, Key string
	Claims   map[string]any
}

// goodToken is a token the policy accepts, for user u.
func (g *gen) goodToken(u int) *Token {
	c := map[string]any{
		"sub": Principals[u], "iss": spec.TokenIssuer, "exp": g.now.Add(time.Hour).Unix(),
	}
	if g.r.IntN(2) == 0 {
		c["aud"] = spec.TokenAudience
	} else {
		c["aud"] = []string{"other", spec.TokenAudience} // an audience list holding it
	}
	if g.r.IntN(3) == 0 {
		c["nbf"] = g.now.Add(-time.Minute).Unix()
	}
	return &Token{Alg: spec.TokenAlg, Key: "service", Claims: c}
}

// claimFaults are the claim grammar's faults: each claim absent,
// malformed (another JSON type) or near its value. Each edits a good
// token's claims. A subject is never changed to another valid one: a
// user sends as one principal only.
var claimFaults = []func(c map[string]any, now time.Time){
	func(c map[string]any, _ time.Time) { delete(c, "sub") },
	func(c map[string]any, _ time.Time) { c["sub"] = "" },
	func(c map[string]any, _ time.Time) { c["sub"] = 42 },
	func(c map[string]any, _ time.Time) { c["sub"] = "p-" + strings.Repeat("x", spec.MaxPrincipalBytes-1) },
	func(c map[string]any, _ time.Time) { c["sub"] = strings.Repeat("€", spec.MaxPrincipalBytes/3+1) },
	func(c map[string]any, _ time.Time) { delete(c, "iss") },
	func(c map[string]any, _ time.Time) { c["iss"] = spec.TokenIssuer + " " },
	func(c map[string]any, _ time.Time) {
		c["iss"] = strings.ToUpper(spec.TokenIssuer[:1]) + spec.TokenIssuer[1:]
	},
	func(c map[string]any, _ time.Time) { c["iss"] = 7 },
	func(c map[string]any, _ time.Time) { delete(c, "aud") },
	func(c map[string]any, _ time.Time) { c["aud"] = spec.TokenAudience[:len(spec.TokenAudience)-1] },
	func(c map[string]any, _ time.Time) { c["aud"] = []string{strings.ToUpper(spec.TokenAudience)} },
	func(c map[string]any, _ time.Time) { c["aud"] = 5 },
	func(c map[string]any, _ time.Time) { delete(c, "exp") },
	func(c map[string]any, now time.Time) { c["exp"] = now.Add(-time.Minute).Unix() },
	func(c map[string]any, _ time.Time) { c["exp"] = "soon" },
	func(c map[string]any, now time.Time) { c["nbf"] = now.Add(5 * time.Minute).Unix() },
	func(c map[string]any, _ time.Time) { c["nbf"] = "now" },
}
