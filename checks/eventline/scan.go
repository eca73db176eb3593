package eventline

// The JSON scanner of the fast path (see decoder.go): it reads one flat
// object of an unambiguous subset of JSON into the decoder's values, and
// answers "undecided" for anything else.

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// token kinds of one value.
const (
	tokString = iota + 1
	tokInt
	tokArray
)

// lineValue is the scanned value of one field.
type lineValue struct {
	tok int
	s   string
	n   int64
	arr []string
}

func skipWS(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scan tokenizes one flat JSON object into d.vals.
func (d *Decoder) scan(s string) (present uint64, ok bool) {
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return 0, false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return 0, false // empty: the full validator names what is missing
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return 0, false
		}
		key, j, escaped, ok := scanString(s, i)
		if !ok || escaped {
			return 0, false
		}
		f, known := fieldByName(key)
		if !known || present&(1<<f) != 0 {
			return 0, false
		}
		i = skipWS(s, j)
		if i >= len(s) || s[i] != ':' {
			return 0, false
		}
		i = skipWS(s, i+1)
		if i >= len(s) {
			return 0, false
		}
		v := &d.vals[f]
		switch c := s[i]; {
		case c == '"':
			v.tok = tokString
			v.s, i, _, ok = scanString(s, i)
		case c == '-' || (c >= '0' && c <= '9'):
			v.tok = tokInt
			v.n, i, ok = scanInt(s, i)
		case c == '[':
			v.tok = tokArray
			v.arr, i, ok = scanStrings(s, i, v.arr[:0])
		default:
			return 0, false
		}
		if !ok {
			return 0, false
		}
		present |= 1 << f
		i = skipWS(s, i)
		if i >= len(s) {
			return 0, false
		}
		if s[i] == ',' {
			i = skipWS(s, i+1)
			continue
		}
		if s[i] != '}' {
			return 0, false
		}
		i = skipWS(s, i+1)
		return present, i == len(s)
	}
}

// scanString reads the JSON string starting at s[i] == '"'. Without
// escapes the result is a substring of s (no allocation).
func scanString(s string, i int) (val string, next int, escaped, ok bool) {
	start := i + 1
	ascii := true
	for j := start; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '"':
			val = s[start:j]
			if !ascii && !utf8.ValidString(val) {
				return "", 0, false, false
			}
			return val, j + 1, false, true
		case c == '\\':
			return unescape(s, start)
		case c < 0x20:
			return "", 0, false, false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", 0, false, false
}

// unescape reads a string with escapes. \u escapes of surrogates are left
// to the full decoder (encoding/json replaces lone surrogates).
func unescape(s string, start int) (val string, next int, escaped, ok bool) {
	var b strings.Builder
	seg := start
	for j := start; j < len(s); {
		c := s[j]
		switch {
		case c == '"':
			b.WriteString(s[seg:j])
			val = b.String()
			if !utf8.ValidString(val) {
				return "", 0, false, false
			}
			return val, j + 1, true, true
		case c < 0x20:
			return "", 0, false, false
		case c == '\\':
			b.WriteString(s[seg:j])
			if j+1 >= len(s) {
				return "", 0, false, false
			}
			switch s[j+1] {
			case '"', '\\', '/':
				b.WriteByte(s[j+1])
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				if j+6 > len(s) {
					return "", 0, false, false
				}
				r, err := strconv.ParseUint(s[j+2:j+6], 16, 32)
				if err != nil || (r >= 0xD800 && r <= 0xDFFF) {
					return "", 0, false, false
				}
				b.WriteRune(rune(r))
				j += 4
			default:
				return "", 0, false, false
			}
			j += 2
			seg = j
		default:
			j++
		}
	}
	return "", 0, false, false
}

// scanInt reads -?(0|[1-9][0-9]*) that fits an int64; a fraction or an
// exponent is undecided.
func scanInt(s string, i int) (int64, int, bool) {
	start := i
	if s[i] == '-' {
		i++
	}
	if i >= len(s) || s[i] < '0' || s[i] > '9' {
		return 0, 0, false
	}
	if s[i] == '0' {
		i++
	} else {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) {
		switch s[i] {
		case '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return 0, 0, false
		}
	}
	n, err := strconv.ParseInt(s[start:i], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return n, i, true
}

func scanStrings(s string, i int, buf []string) ([]string, int, bool) {
	i = skipWS(s, i+1)
	out := buf
	if i < len(s) && s[i] == ']' {
		return out, i + 1, true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return nil, 0, false
		}
		v, j, _, ok := scanString(s, i)
		if !ok {
			return nil, 0, false
		}
		out = append(out, v)
		i = skipWS(s, j)
		if i >= len(s) {
			return nil, 0, false
		}
		if s[i] == ']' {
			return out, i + 1, true
		}
		if s[i] != ',' {
			return nil, 0, false
		}
		i = skipWS(s, i+1)
	}
}
