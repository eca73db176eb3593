package genload

import (
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// keyPool are the keys users draw from, shared by all users so that two
// users send one key in one round: keys that differ only by case, keys
// of one byte and of spec.MaxKeyBytes and one less, keys only an
// sf-string can carry (a space, a comma, a quote, a backslash) and every
// visible ASCII sign a bare key may hold.
var keyPool = []string{
	"k1", "K1", "k2", "order-2026-0001", "ORDER-2026-0001", "x", "X",
	strings.Repeat("a", spec.MaxKeyBytes), strings.Repeat("a", spec.MaxKeyBytes-1), strings.Repeat("A", spec.MaxKeyBytes),
	`with "quote"`, `back\slash`, "with space", "a,b", "~!#$%&'*+-.^_`|/:;<=>?@[]{}",
}

// key draws a key of the pool, or one of 200 numbered keys (all users
// draw from both).
func (g *gen) key() string {
	if g.r.IntN(3) == 0 {
		return keyPool[g.r.IntN(len(keyPool))]
	}
	return "key-" + strconv.Itoa(g.r.IntN(200))
}

// bareOK tells whether key can be sent bare: visible ASCII but `"`, `\`
// and `,` (spec/orderapi.go).
func bareOK(key string) bool {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == ',' {
			return false
		}
	}
	return key != ""
}

// sfString is key as an RFC 8941 sf-string.
func sfString(key string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		if c := key[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	b.WriteByte('"')
	return b.String()
}

// encodeKey writes key bare or as an sf-string, sometimes with spaces
// around it (both mean the same key).
func (g *gen) encodeKey(key string) string {
	v := sfString(key)
	if bareOK(key) && g.r.IntN(2) == 0 {
		v = key
	}
	if g.r.IntN(8) == 0 {
		v = " " + v + " "
	}
	return v
}

// badKeys are Idempotency-Key headers the contract refuses: too long,
// empty, characters a bare key may not hold, broken sf-strings, an
// sf-string with parameters, non-ASCII, two values.
var badKeys = [][]string{
	nil,
	{""},
	{`""`},
	{strings.Repeat("a", spec.MaxKeyBytes+1)},
	{sfString(strings.Repeat("b", spec.MaxKeyBytes+1))},
	{"with space"},
	{"a,b"},
	{`a"b`},
	{`a\b`},
	{"a\tb"},
	{`"a` + "\t" + `b"`},
	{"ключ"},
	{`"ключ"`},
	{`"abc`},
	{`abc"`},
	{`"a\x"`},
	{`"a"b"`},
	{`"abc";p=1`},
	{`"abc\"`},
	{"k1", "k2"},
	{"k1", "k1"},
}
