package checks

// Bearer tokens (spec/tokens.go): the answer's status and every write the
// request made (rows of orders, lines, idempotency records, intents, and
// stock moved away from its seed).
func init() {
	tokens := derivation{metrics: func(f facts) []metricValue {
		orders, lines, idem := f.countOrders()
		writes := orders + lines + idem + f.m.Counts().Intents
		for _, sku := range f.m.SeededSKUs() {
			seeded, _ := f.m.SeedStock(sku)
			d := f.m.StockOf(sku) - seeded
			writes += max(d, -d) // stock moved either way
		}
		return []metricValue{f.requestStatus("status", 0), num("writes", writes)}
	}}
	for _, id := range []string{"tokenMissing", "tokenBadSignature", "tokenExpired", "tokenWrongAlg"} {
		derive(id, tokens)
	}
}
