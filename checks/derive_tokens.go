package checks

import "github.com/orderflow-audit/orderflow-audit/spec"

// tokenDerivations are the derivations of this file's scenarios, by id
// (derivations). Bearer tokens (spec/tokens.go).
var tokenDerivations = map[string]derivation{
	"tokenMissing":      badToken,
	"tokenBadSignature": badToken,
	"tokenExpired":      badToken,
	"tokenWrongAlg":     badToken,
	// Each metric but writes is the answer to the client's request whose
	// idempotency key is the metric's name.
	"tokenClaims": {metrics: func(f facts) []metricValue {
		s, _ := spec.Lookup("tokenClaims")
		var out []metricValue
		for _, name := range s.MetricNames() {
			if name == "writes" {
				out = append(out, num("writes", f.writes()))
				continue
			}
			out = append(out, f.answerTo(name))
		}
		return out
	}},
}

// badToken derives the scenarios of one bad token of spec/tokens.go
// (tokenMissing, tokenBadSignature, tokenExpired, tokenWrongAlg).
var badToken = derivation{metrics: func(f facts) []metricValue {
	return []metricValue{f.requestStatus("status", 0), num("writes", f.writes())}
}}

// writes counts the rows of orders, lines, idempotency records and intents
// at the end, and how far each seeded SKU's stock moved from its seed.
func (f facts) writes() int64 {
	orders, lines, idem := f.countOrders()
	n := orders + lines + idem + f.m.Counts().Intents
	for _, sku := range f.m.SeededSKUs() {
		seeded, _ := f.m.SeedStock(sku)
		d := f.m.StockOf(sku) - seeded
		n += max(d, -d) // stock moved either way
	}
	return n
}

// answerTo is the status the client recorded for its request with
// idempotency key key (the metric's name).
func (f facts) answerTo(key string) metricValue {
	for _, r := range f.m.ClientRequests() {
		if r.Key == key {
			return num(key, r.Status)
		}
	}
	return unknown(key, "the client recorded no request with key "+key)
}
