package genload

import (
	"encoding/json"
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

// quantity draws a quantity, mostly small, sometimes at or past a bound.
func (g *gen) quantity() int64 {
	switch g.r.IntN(32) {
	case 0:
		return spec.MaxQuantity
	case 1:
		return spec.MaxQuantity + 1
	case 2:
		return 0
	case 3:
		return -1
	}
	return int64(1 + g.r.IntN(3))
}

// sku draws a SKU: mostly stocked, sometimes unknown or invalid.
func (g *gen) sku() string {
	cat := Catalog()
	switch n := g.r.IntN(30); {
	case n == 0:
		return badSKUs[g.r.IntN(len(badSKUs))]
	case n < 3:
		return unknownSKUs[g.r.IntN(len(unknownSKUs))]
	}
	return cat[g.r.IntN(len(cat))].SKU
}

// amountBodies are orders at the amount's bound: exactly 2^63-1 cents,
// one cent over, and over by another line.
var amountBodies = [][]line{
	{{"BIG", spec.MaxQuantity}, {"ONE", 807}},
	{{"BIG", spec.MaxQuantity}, {"ONE", 808}},
	{{"BIG", spec.MaxQuantity}},
	{{"ONE", 807}, {"BIG", spec.MaxQuantity}},
	{{"BIG", spec.MaxQuantity}, {"SKU-A", 1}},
	{{"BIG", spec.MaxQuantity}, {"FREE", spec.MaxQuantity}},
}

// lines draws an order: one line (in either form) to spec.MaxLines, or
// one past; a SKU twice now and then; an order at the amount's bound.
func (g *gen) lines() ([]line, bool) {
	if g.r.IntN(8) == 0 {
		b := amountBodies[g.r.IntN(len(amountBodies))]
		return append([]line(nil), b...), false
	}
	n := 1 + g.r.IntN(3)
	switch g.r.IntN(14) {
	case 0:
		n = spec.MaxLines
	case 1:
		n = spec.MaxLines + 1
	case 2:
		n = 0
	}
	if n > 4 {
		// Many lines: distinct plain SKUs (the catalog has sixteen and a
		// seventeenth makes the line count, not a SKU, the fault).
		out := make([]line, n)
		perm := g.r.Perm(n)
		for i := range out {
			sku := "SKU-Z"
			if perm[i] < 16 {
				sku = plainSKU(perm[i])
			}
			out[i] = line{sku: sku, q: int64(1 + g.r.IntN(2))}
		}
		return out, false
	}
	out := make([]line, n)
	for i := range out {
		out[i] = line{sku: g.sku(), q: g.quantity()}
	}
	if n > 1 && g.r.IntN(8) == 0 {
		out[n-1].sku = out[0].sku // a SKU on two lines
	}
	return out, n == 1 && g.r.IntN(2) == 0
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

// badBody draws one of badBodies, or a valid order padded past
// spec.MaxBodyBytes.
func (g *gen) badBody() string {
	if g.r.IntN(len(badBodies)+1) == 0 {
		return `{"sku":"SKU-A",` + strings.Repeat(" ", spec.MaxBodyBytes) + `"quantity":1}`
	}
	return badBodies[g.r.IntN(len(badBodies))]
}
