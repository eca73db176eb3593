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

// auth draws the Authorization header of user u: mostly "Bearer " and a
// good token; else the scheme in another case (still good), another
// scheme, a header too short to hold one, a token that is no JWT, one of
// another alg or key, or one claim fault.
func (g *gen) auth(u int) (string, *Token) {
	tok := g.goodToken(u)
	if g.r.IntN(5) != 0 {
		return "Bearer ", tok
	}
	switch g.r.IntN(12) {
	case 0:
		return "", nil
	case 1:
		return []string{"bearer ", "BEARER ", "bEaReR "}[g.r.IntN(3)], tok
	case 2:
		return []string{"Basic ", "Bearer", "Token "}[g.r.IntN(3)], tok
	case 3:
		return []string{"Bear", "Bearer", "B", "Bearer x.y.z", "Bearer e30.e30.e30"}[g.r.IntN(5)], nil
	case 4:
		tok.Alg = []string{"HS512", "none"}[g.r.IntN(2)]
		if tok.Alg == "none" {
			tok.Key = "none"
		}
		return "Bearer ", tok
	case 5:
		tok.Key = "other"
		return "Bearer ", tok
	}
	claimFaults[g.r.IntN(len(claimFaults))](tok.Claims, g.now)
	return "Bearer ", tok
}
