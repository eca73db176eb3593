package genload

import (
	"strings"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// variant edits a fresh valid request into one variant of the input
// domain: one fault, or a valid request at a bound.
type variant func(g *gen, req *Request)

// amountBodies are orders at the amount's bound: exactly 2^63-1 cents
// (in either line order), one cent over, and over by another line.
var amountBodies = [][]line{
	{{"BIG", spec.MaxQuantity}, {"ONE", 807}},
	{{"ONE", 807}, {"BIG", spec.MaxQuantity}},
	{{"BIG", spec.MaxQuantity}, {"ONE", 808}},
	{{"BIG", spec.MaxQuantity}},
	{{"BIG", spec.MaxQuantity}, {"SKU-A", 1}},
	{{"BIG", spec.MaxQuantity}, {"FREE", spec.MaxQuantity}},
}

// variants is the deck: every bad key, bad body and claim fault, the
// Authorization header's forms, the lines' and quantities' bounds on
// both sides, unknown and over-long SKUs, a SKU twice, the amount's
// bound.
var variants = func() []variant {
	var out []variant
	for _, k := range badKeys {
		out = append(out, func(_ *gen, r *Request) { r.Keys = k })
	}
	for _, b := range badBodies {
		out = append(out, func(_ *gen, r *Request) { r.Body = b })
	}
	out = append(out, func(_ *gen, r *Request) {
		r.Body = `{"sku":"SKU-A",` + strings.Repeat(" ", spec.MaxBodyBytes) + `"quantity":1}`
	})
	for _, f := range claimFaults {
		out = append(out, func(g *gen, r *Request) { f(r.Token.Claims, g.now) })
	}
	for _, a := range []string{"bearer ", "BEARER ", "bEaReR ", "Basic ", "Bearer", "Token "} {
		out = append(out, func(_ *gen, r *Request) { r.Auth = a })
	}
	for _, h := range []string{"", "Bear", "Bearer", "B", "Bearer x.y.z", "Bearer e30.e30.e30"} {
		out = append(out, func(_ *gen, r *Request) { r.Auth, r.Token = h, nil })
	}
	out = append(out,
		func(_ *gen, r *Request) { r.Token.Alg = "HS512" },
		func(_ *gen, r *Request) { r.Token.Alg, r.Token.Key = "none", "none" },
		func(_ *gen, r *Request) { r.Token.Key = "other" },
	)
	for _, n := range []int{0, spec.MaxLines, spec.MaxLines + 1} {
		out = append(out, func(g *gen, r *Request) { r.Body = g.encodeBody(plainLines(n), false) })
	}
	for _, q := range []int64{0, -1, 1, spec.MaxQuantity, spec.MaxQuantity + 1} {
		out = append(out, func(g *gen, r *Request) { r.Body = g.encodeBody([]line{{sku: "SKU-B", q: q}}, g.r.IntN(2) == 0) })
	}
	for _, sku := range append(append(append([]string(nil), unknownSKUs...), badSKUs...), longSKU, "Ü-ß-€") {
		out = append(out, func(g *gen, r *Request) {
			r.Body = g.encodeBody([]line{{sku: "SKU-C", q: 1}, {sku: sku, q: 1}}, false)
		})
	}
	out = append(out, func(g *gen, r *Request) {
		r.Body = g.encodeBody([]line{{sku: "SKU-D", q: 1}, {sku: "SKU-E", q: 1}, {sku: "SKU-D", q: 2}}, false)
	})
	for _, b := range amountBodies {
		out = append(out, func(g *gen, r *Request) { r.Body = g.encodeBody(b, false) })
	}
	return out
}()
