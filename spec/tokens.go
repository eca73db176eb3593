package spec

// The bearer-token policy of the order service, which the business layer
// of the verifier holds its answers to: HS256 signed with the service's
// key, exp required and not passed, nbf (when present) passed, this issuer
// and this audience.
const (
	TokenAlg      = "HS256"
	TokenIssuer   = "orderflow-audit"
	TokenAudience = "orders"
)

// Bearer tokens (U79): every bad token is refused with 401 and no write.
var tokenScenarios = []Scenario{
	token("tokenMissing", "no Authorization header: 401, zero writes"),
	token("tokenBadSignature", "HS256 token signed with another key: 401, zero writes"),
	token("tokenExpired", "HS256 token expired a minute ago: 401, zero writes"),
	token("tokenWrongAlg", "token signed with HS512 by the right key (alg is not HS256): 401, zero writes"),
	u79("tokenClaims", "five tokens of the right key but one fault each: alg none (unsigned), no exp, nbf in five minutes, "+
		"another issuer, another audience: each 401, zero writes",
		claimAnswer("algNone", "an unsigned token (alg none)"),
		claimAnswer("noExp", "a token without exp"),
		claimAnswer("notYetValid", "a token whose nbf is five minutes ahead"),
		claimAnswer("wrongIssuer", "a token of another issuer"),
		claimAnswer("wrongAudience", "a token for another audience"),
		shared("writes", "0")).
		withDetails("each request is sent under the idempotency key that names its metric"),
}

// token declares a scenario of one bad token: 401 and no write.
func token(id, desc string) Scenario {
	return u79(id, desc, Metric{Name: "status", Accept: "401", Means: "the HTTP status of the answer"}, shared("writes", "0"))
}

// claimAnswer is the metric of tokenClaims that reports the answer to the
// request with token.
func claimAnswer(name, token string) Metric {
	return Metric{Name: name, Accept: "401", Means: "the HTTP status of the answer to the request with " + token}
}
