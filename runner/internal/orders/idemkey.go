package orders

import (
	"errors"
	"strings"
)

// MaxKeyBytes is the longest Idempotency-Key accepted (the width of
// idempotency_records.idem_key).
const MaxKeyBytes = 255

// HeaderIdempotencyKey is the request header of
// draft-ietf-httpapi-idempotency-key-header.
const HeaderIdempotencyKey = "Idempotency-Key"

var (
	errKeyMissing = errors.New("missing Idempotency-Key header")
	errKeyInvalid = errors.New("invalid Idempotency-Key header")
)

// parseIdempotencyKey reads the header values. The draft defines the value
// as a Structured Field String (`"abc"`, RFC 8941 section 3.3.3); a bare
// token of visible ASCII (`abc`) is accepted too and means the same key.
// More than one value, an empty key, a key over MaxKeyBytes or a character
// outside visible ASCII is invalid.
func parseIdempotencyKey(values []string) (string, error) {
	if len(values) == 0 {
		return "", errKeyMissing
	}
	if len(values) > 1 {
		return "", errKeyInvalid
	}
	v := strings.Trim(values[0], " \t")
	if v == "" {
		return "", errKeyMissing
	}
	var key string
	if v[0] == '"' {
		k, ok := parseSFString(v)
		if !ok {
			return "", errKeyInvalid
		}
		key = k
	} else {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == ',' {
				return "", errKeyInvalid
			}
		}
		key = v
	}
	if key == "" || len(key) > MaxKeyBytes {
		return "", errKeyInvalid
	}
	return key, nil
}

// parseSFString parses a whole sf-string: DQUOTE *chr DQUOTE, where chr is
// printable ASCII with `"` and `\` escaped by a backslash.
func parseSFString(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i >= len(v)-1 || (v[i] != '"' && v[i] != '\\') {
				return "", false
			}
			b.WriteByte(v[i])
		case c == '"':
			return "", false
		case c < 0x20 || c >= 0x7f:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}
