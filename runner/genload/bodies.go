package genload

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// line is one line of a generated body.
type line struct {
	sku string
	q   int64
}

// unknownSKUs are SKUs the catalog does not hold: a case variant of a
// stocked one, one of spec.MaxSKUBytes bytes, one of non-ASCII runes.
var unknownSKUs = []string{"sku-a", "SKU-Z", "SKU-" + strings.Repeat("8", spec.MaxSKUBytes-4), "Ü-ß-$"}

// badSKUs are SKUs the contract refuses: empty, one byte too long.
var badSKUs = []string{"", "SKU-" + strings.Repeat("9", spec.MaxSKUBytes-3)}

// lines draws a valid order: one to three lines of distinct stocked
// SKUs (the scarce one a quarter of the time), small quantities, one
// line in either form.
func (g *gen) lines() ([]line, bool) {
	cat := slices.DeleteFunc(Catalog(), func(it Item) bool { return it.SKU == "SCARCE" && g.r.IntN(4) != 0 })
	n := 1 + g.r.IntN(3)
	perm := g.r.Perm(len(cat))
	out := make([]line, n)
	for i := range out {
		out[i] = line{sku: cat[perm[i]].SKU, q: int64(1 + g.r.IntN(3))}
		if cat[perm[i]].PriceCents == BigPrice {
			out[i].q = int64(1 + g.r.IntN(spec.MaxQuantity))
		}
	}
	return out, n == 1 && g.r.IntN(2) == 0
}

// plainLines are n lines of distinct plain SKUs, the seventeenth (past
// the catalog's sixteen) unknown.
func plainLines(n int) []line {
	out := make([]line, n)
	for i := range out {
		out[i] = line{sku: "SKU-Z", q: 1}
		if i < 16 {
			out[i].sku = plainSKU(15 - i)
		}
	}
	return out
}

// variant is another request under a key sent before: the same one
// (reformatted or not), its lines reversed, one quantity changed, the
// other form, or a fresh order.
func (g *gen) variant(lines []line, one bool) ([]line, bool) {
	out := append([]line(nil), lines...)
	switch g.r.IntN(6) {
	case 0, 1:
		return out, one
	case 2:
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out, one
	case 3:
		if len(out) > 0 {
			out[len(out)-1].q++
		}
		return out, one
	case 4:
		if len(out) == 1 {
			return out, !one
		}
	}
	return g.lines()
}

// encodeBody writes lines as a JSON body, its keys in either order,
// with or without whitespace: every writing of one order is the same
// request.
func (g *gen) encodeBody(lines []line, one bool) string {
	pretty := g.r.IntN(3) == 0
	swap := g.r.IntN(2) == 0
	sep := ","
	if pretty {
		sep = ",\n  "
	}
	item := func(l line) string {
		s, q := `"sku":`+jsonString(l.sku), `"quantity":`+strconv.FormatInt(l.q, 10)
		if swap {
			s, q = q, s
		}
		return "{" + s + sep + q + "}"
	}
	if one && len(lines) == 1 {
		return item(lines[0])
	}
	parts := make([]string, len(lines))
	for i, l := range lines {
		parts[i] = item(l)
	}
	return `{"lines":[` + strings.Join(parts, sep) + `]}`
}

func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string cannot fail
	return string(b)
}

// badBodies are bodies the contract refuses whatever their lines: not
// JSON, not an object, trailing data, an unknown field, a quantity of
// the wrong type, both forms at once, no SKU.
var badBodies = []string{
	``,
	`not json`,
	`[]`,
	`{}`,
	`{"sku":"SKU-A","quantity":1} {}`,
	`{"sku":"SKU-A","quantity":1,"note":"x"}`,
	`{"sku":"SKU-A","quantity":"1"}`,
	`{"sku":"SKU-A","quantity":1.5}`,
	`{"sku":"SKU-A","quantity":1,"lines":[{"sku":"SKU-B","quantity":1}]}`,
	`{"lines":[{"sku":"SKU-A","quantity":1,"price":1}]}`,
	`{"lines":{"sku":"SKU-A","quantity":1}}`,
	`{"sku":"SKU-A"}`,
	`{"quantity":2}`,
}
