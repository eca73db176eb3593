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
	{ID: "tokenClaims", Suite: SuiteU79, Boundary: BoundaryNone,
		Description: "five tokens of the right key but one fault each: alg none (unsigned), no exp, nbf in five minutes, " +
			"another issuer, another audience: each 401, zero writes",
		Metrics: []Metric{{"algNone", "401"}, {"noExp", "401"}, {"notYetValid", "401"}, {"wrongIssuer", "401"},
			{"wrongAudience", "401"}, {"writes", "0"}},
		Needs: []Feature{FeatureOrderService}},
}

// token declares a scenario of one bad token: 401 and no write.
func token(id, desc string) Scenario {
	return Scenario{ID: id, Suite: SuiteU79, Boundary: BoundaryNone, Description: desc,
		Metrics: []Metric{{"status", "401"}, {"writes", "0"}}, Needs: []Feature{FeatureOrderService}}
}
