package spec

// Bearer tokens (U79): every bad token is refused with 401 and no write.
func init() {
	token := func(id, desc string) Scenario {
		return Scenario{ID: id, Suite: SuiteU79, Boundary: BoundaryNone, Description: desc,
			Metrics: []Metric{{"status", "401"}, {"writes", "0"}}, Needs: []Feature{FeatureOrderService}}
	}
	register(
		token("tokenMissing", "no Authorization header: 401, zero writes"),
		token("tokenBadSignature", "HS256 token signed with another key: 401, zero writes"),
		token("tokenExpired", "HS256 token expired a minute ago: 401, zero writes"),
		token("tokenWrongAlg", "token signed with HS512 by the right key (alg is not HS256): 401, zero writes"),
	)
}
