package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The reference model's reading of a raw request, written from the
// contract (spec/orderapi.go), not from the order service: each function
// says what the contract makes of one part of the request.

// bearerToken reports whether an Authorization header sent as prefix
// followed by a token (hasToken) is of the contract's form: the scheme
// "Bearer" in any case, one space, then the token.
func bearerToken(prefix string, hasToken bool) bool {
	return hasToken && strings.EqualFold(prefix, "Bearer ")
}

// principalOK reports whether a subject may be a principal: 1 to
// spec.MaxPrincipalBytes bytes.
func principalOK(sub string) bool {
	return sub != "" && len(sub) <= spec.MaxPrincipalBytes
}

// ContractKey is contractKey for the witness cross-check, which holds the
// binlog's idempotency records to the key the contract reads from a
// generated request's headers.
func ContractKey(values []string) (string, bool) { return contractKey(values) }

// contractKey reads the Idempotency-Key values: exactly one, an
// sf-string or a bare key, carrying 1 to spec.MaxKeyBytes bytes.
func contractKey(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	v := strings.Trim(values[0], " \t")
	var key string
	if strings.HasPrefix(v, `"`) {
		k, ok := sfStringValue(v)
		if !ok {
			return "", false
		}
		key = k
	} else {
		for _, c := range []byte(v) {
			if !bareKeyByte(c) {
				return "", false
			}
		}
		key = v
	}
	return key, key != "" && len(key) <= spec.MaxKeyBytes
}

// bareKeyByte: visible ASCII but `"`, `\` and `,`.
func bareKeyByte(c byte) bool {
	return c > ' ' && c < 0x7f && c != '"' && c != '\\' && c != ','
}

// sfStringValue reads v as one whole RFC 8941 sf-string (section
// 3.3.3): DQUOTE, printable ASCII (0x20-0x7e) with `"` and `\` escaped
// by `\`, DQUOTE, nothing after it.
func sfStringValue(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			return b.String(), i == len(v)-1
		case c == '\\':
			if i+1 >= len(v) || (v[i+1] != '"' && v[i+1] != '\\') {
				return "", false
			}
			i++
			b.WriteByte(v[i])
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false // no closing DQUOTE
}

// contractLine is one line of an order as the contract reads it.
type contractLine struct {
	SKU      string
	Quantity int64
}

// contractOrder is a request body as the contract reads it: its form
// (one line, or lines) and its lines in order. Two bodies are the same
// request when their contractOrders are equal.
type contractOrder struct {
	One   bool
	Lines []contractLine
}

func (o contractOrder) equal(p contractOrder) bool {
	return o.One == p.One && slices.Equal(o.Lines, p.Lines)
}

// errTooLarge is a body over spec.MaxBodyBytes (413).
var errTooLarge = errors.New("body too large")

// contractBody reads a body: at most spec.MaxBodyBytes, one JSON object
// of sku and quantity or of lines (not both), keys matched exactly,
// nothing after it; the lines valid (contractLines).
func contractBody(body string) (contractOrder, error) {
	if len(body) > spec.MaxBodyBytes {
		return contractOrder{}, errTooLarge
	}
	obj, err := jsonObject([]byte(body), true)
	if err != nil {
		return contractOrder{}, err
	}
	raw, several := obj["lines"]
	if several {
		if len(obj) != 1 {
			return contractOrder{}, errors.New("lines with sku or quantity")
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil || items == nil {
			return contractOrder{}, errors.New("lines is not an array")
		}
		if len(items) < 1 || len(items) > spec.MaxLines {
			return contractOrder{}, errors.New("lines count out of range")
		}
		var out contractOrder
		for _, it := range items {
			o, err := jsonObject(it, false)
			if err != nil {
				return contractOrder{}, err
			}
			l, err := contractLineOf(o)
			if err != nil {
				return contractOrder{}, err
			}
			out.Lines = append(out.Lines, l)
		}
		return out, distinctSKUs(out.Lines)
	}
	l, err := contractLineOf(obj)
	if err != nil {
		return contractOrder{}, err
	}
	return contractOrder{One: true, Lines: []contractLine{l}}, nil
}

// jsonObject decodes one JSON object (and, whole, nothing after it).
func jsonObject(b []byte, whole bool) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); whole && err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return obj, nil
}

// contractLineOf reads an object of exactly sku and quantity: the SKU
// 1..spec.MaxSKUBytes bytes of UTF-8, the quantity an integer
// 1..spec.MaxQuantity.
func contractLineOf(obj map[string]json.RawMessage) (contractLine, error) {
	rawSKU, okS := obj["sku"]
	rawQ, okQ := obj["quantity"]
	if !okS || !okQ || len(obj) != 2 {
		return contractLine{}, errors.New("not exactly sku and quantity")
	}
	var l contractLine
	if err := json.Unmarshal(rawSKU, &l.SKU); err != nil {
		return l, errors.New("sku is not a string")
	}
	q, err := strconv.ParseInt(string(bytes.TrimSpace(rawQ)), 10, 64)
	if err != nil {
		return l, errors.New("quantity is not an integer")
	}
	l.Quantity = q
	switch {
	case l.SKU == "" || len(l.SKU) > spec.MaxSKUBytes || !utf8.ValidString(l.SKU):
		return l, errors.New("sku out of range")
	case q < 1 || q > spec.MaxQuantity:
		return l, errors.New("quantity out of range")
	}
	return l, nil
}

// distinctSKUs: no SKU on two lines.
func distinctSKUs(lines []contractLine) error {
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l.SKU] {
			return errors.New("a sku on two lines")
		}
		seen[l.SKU] = true
	}
	return nil
}
