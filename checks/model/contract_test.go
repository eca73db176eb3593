package model

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The reference model's reading of a raw request, at each bound of the
// contract from both sides (a flipped comparison or an off-by-one in the
// model fails here; the histories test the rules around them).

func TestContractKey(t *testing.T) {
	max := strings.Repeat("a", spec.MaxKeyBytes)
	for _, c := range []struct {
		values []string
		key    string
		ok     bool
	}{
		{[]string{"k1"}, "k1", true},
		{[]string{`"k1"`}, "k1", true},
		{[]string{" k1 "}, "k1", true},
		{[]string{" \"K1\"\t"}, "K1", true},
		{[]string{"x"}, "x", true},
		{[]string{max}, max, true},
		{[]string{`"` + max + `"`}, max, true},
		{[]string{max + "a"}, "", false},
		{[]string{`"` + max + `a"`}, "", false},
		{[]string{"~!#$%&'*+-.^_`|/:;<=>?@[]{}"}, "~!#$%&'*+-.^_`|/:;<=>?@[]{}", true},
		{[]string{`"with space"`}, "with space", true},
		{[]string{`"a,b"`}, "a,b", true},
		{[]string{`"a\"b"`}, `a"b`, true},
		{[]string{`"a\\b"`}, `a\b`, true},
		{nil, "", false},
		{[]string{}, "", false},
		{[]string{""}, "", false},
		{[]string{`""`}, "", false},
		{[]string{"k1", "k2"}, "", false},
		{[]string{"k1", "k1"}, "", false},
		{[]string{"with space"}, "", false},
		{[]string{"a,b"}, "", false},
		{[]string{`a"b`}, "", false},
		{[]string{`a\b`}, "", false},
		{[]string{"a\tb"}, "", false},
		{[]string{"a\x7fb"}, "", false},
		{[]string{"a\x1fb"}, "", false},
		{[]string{"ключ"}, "", false},
		{[]string{`"ключ"`}, "", false},
		{[]string{"\"a\tb\""}, "", false},
		{[]string{"\"a\x7fb\""}, "", false},
		{[]string{"\"a\x1fb\""}, "", false},
		{[]string{`"a~b"`}, "a~b", true},
		{[]string{`"a b"`}, "a b", true},
		{[]string{`"abc`}, "", false},
		{[]string{`abc"`}, "", false},
		{[]string{`"`}, "", false},
		{[]string{`"a\x"`}, "", false},
		{[]string{`"a"b"`}, "", false},
		{[]string{`"abc";p=1`}, "", false},
		{[]string{`"abc\"`}, "", false},
		{[]string{`"abc\`}, "", false},
	} {
		key, ok := contractKey(c.values)
		if key != c.key && c.ok || ok != c.ok {
			t.Errorf("contractKey(%q) = %q, %v; want %q, %v", c.values, key, ok, c.key, c.ok)
		}
	}
}

func TestBearerAndPrincipal(t *testing.T) {
	for _, c := range []struct {
		prefix string
		token  bool
		want   bool
	}{
		{"Bearer ", true, true}, {"bearer ", true, true}, {"BEARER ", true, true},
		{"Bearer ", false, false}, {"Bearer", true, false}, {"Bearer  ", true, false}, {"Basic ", true, false},
		{"", true, false}, {"Bear", false, false},
	} {
		if got := bearerToken(c.prefix, c.token); got != c.want {
			t.Errorf("bearerToken(%q, %v) = %v; want %v", c.prefix, c.token, got, c.want)
		}
	}
	for _, c := range []struct {
		sub  string
		want bool
	}{
		{"a", true}, {strings.Repeat("x", spec.MaxPrincipalBytes), true}, {strings.Repeat("ü", spec.MaxPrincipalBytes/2), true},
		{"", false}, {strings.Repeat("x", spec.MaxPrincipalBytes+1), false}, {strings.Repeat("€", spec.MaxPrincipalBytes/3+1), false},
	} {
		if got := principalOK(c.sub); got != c.want {
			t.Errorf("principalOK(%d bytes) = %v; want %v", len(c.sub), got, c.want)
		}
	}
}

func TestContractBody(t *testing.T) {
	lines := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = `{"sku":"S` + string(rune('a'+i)) + `","quantity":1}`
		}
		return `{"lines":[` + strings.Join(parts, ",") + `]}`
	}
	one := func(sku, q string) string { return `{"sku":"` + sku + `","quantity":` + q + `}` }
	for _, c := range []struct {
		body  string
		lines int // 0: refused
		large bool
	}{
		{one("A", "1"), 1, false},
		{one("A", "1000"), 1, false},
		{one("A", "1001"), 0, false},
		{one("A", "0"), 0, false},
		{one("A", "-1"), 0, false},
		{one("A", `"1"`), 0, false},
		{one("A", "1.5"), 0, false},
		{one(strings.Repeat("s", spec.MaxSKUBytes), "1"), 1, false},
		{one(strings.Repeat("s", spec.MaxSKUBytes+1), "1"), 0, false},
		{one(strings.Repeat("ü", spec.MaxSKUBytes/2), "1"), 1, false},
		{one("", "1"), 0, false},
		{lines(1), 1, false},
		{lines(spec.MaxLines), spec.MaxLines, false},
		{lines(spec.MaxLines + 1), 0, false},
		{`{"lines":[]}`, 0, false},
		{`{"lines":null}`, 0, false},
		{`{"lines":{"sku":"A","quantity":1}}`, 0, false},
		{`{"lines":[{"sku":"A","quantity":1},{"sku":"A","quantity":2}]}`, 0, false},
		{`{"lines":[{"sku":"A","quantity":1,"price":1}]}`, 0, false},
		{`{"sku":"A","quantity":1,"lines":[{"sku":"B","quantity":1}]}`, 0, false},
		{`{"sku":"A","quantity":1,"note":"x"}`, 0, false},
		{`{"SKU":"A","quantity":1}`, 0, false},
		{`{"sku":"A"}`, 0, false},
		{`{"quantity":1}`, 0, false},
		{`{"sku":"A","quantity":1} {}`, 0, false},
		{`{"sku":"A","quantity":1}` + " \n", 1, false},
		{``, 0, false},
		{`[]`, 0, false},
		{`not json`, 0, false},
		{`{"sku":"A",` + strings.Repeat(" ", spec.MaxBodyBytes-len(`{"sku":"A","quantity":1}`)) + `"quantity":1}`, 1, false},
		{`{"sku":"A",` + strings.Repeat(" ", spec.MaxBodyBytes-len(`{"sku":"A","quantity":1}`)+1) + `"quantity":1}`, 0, true},
	} {
		o, err := contractBody(c.body)
		short := c.body
		if len(short) > 60 {
			short = short[:60] + "..."
		}
		switch {
		case c.lines > 0 && (err != nil || len(o.Lines) != c.lines):
			t.Errorf("contractBody(%s) = %d lines, %v; want %d lines", short, len(o.Lines), err, c.lines)
		case c.lines == 0 && err == nil:
			t.Errorf("contractBody(%s) = %v; want a refusal", short, o)
		case c.lines == 0 && (err == errTooLarge) != c.large:
			t.Errorf("contractBody(%s) = %v; want too large %v", short, err, c.large)
		}
	}
	// The same request: whitespace and key order aside; the form and the
	// lines' order count.
	parse := func(b string) contractOrder {
		o, err := contractBody(b)
		if err != nil {
			t.Fatalf("contractBody(%s): %v", b, err)
		}
		return o
	}
	a := parse(`{"lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}]}`)
	if b := parse("{\"lines\":[ {\"quantity\":1, \"sku\":\"A\"},\n{\"sku\":\"B\",\"quantity\":2}]}"); !a.equal(b) {
		t.Errorf("%v and %v: want the same request", a, b)
	}
	for _, other := range []string{
		`{"lines":[{"sku":"B","quantity":2},{"sku":"A","quantity":1}]}`,
		`{"lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":3}]}`,
		`{"lines":[{"sku":"A","quantity":1}]}`,
	} {
		if b := parse(other); a.equal(b) {
			t.Errorf("%v and %v: want other requests", a, b)
		}
	}
	if x, y := parse(`{"sku":"A","quantity":1}`), parse(`{"lines":[{"sku":"A","quantity":1}]}`); x.equal(y) {
		t.Errorf("the one-line form and lines: want other requests")
	}
}

func TestPlaceAnswers(t *testing.T) {
	m := New(nil, nil)
	for _, s := range []struct {
		sku          string
		stock, price int64
	}{{"A", 10, 1250}, {"BIG", 2000, math.MaxInt64 / 1000}, {"ONE", 2000, 1}, {"FREE", 5, 0}} {
		m.seedStock[s.sku], m.stock[s.sku], m.seedPrice[s.sku] = s.stock, s.stock, s.price
	}
	m.stock["A"] = 3 // what the orders left
	o := func(ls ...contractLine) contractOrder { return contractOrder{Lines: ls} }
	for _, c := range []struct {
		order contractOrder
		want  []int64
	}{
		{o(contractLine{"A", 3}), []int64{201}},
		{o(contractLine{"A", 4}), []int64{409, 201}},
		{o(contractLine{"a", 1}), []int64{404}},
		{o(contractLine{"A", 4}, contractLine{"Z", 1}), []int64{404, 409}},
		{o(contractLine{"FREE", 5}), []int64{201}},
		{o(contractLine{"BIG", 1000}), []int64{201}},
		{o(contractLine{"BIG", 1000}, contractLine{"ONE", 807}), []int64{201}},
		{o(contractLine{"ONE", 807}, contractLine{"BIG", 1000}), []int64{201}},
		{o(contractLine{"BIG", 1000}, contractLine{"ONE", 808}), []int64{500}},
		{o(contractLine{"BIG", 1000}, contractLine{"FREE", 5}), []int64{201}},
		{o(contractLine{"BIG", 1000}, contractLine{"A", 1}), []int64{500}},
	} {
		got := m.placeAnswers(c.order)
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("placeAnswers(%v) = %v; want %v", c.order.Lines, got, c.want)
		}
	}
}
