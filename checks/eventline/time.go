package eventline

import "time"

// parseStrictTime accepts YYYY-MM-DDTHH:MM:SS[.1-9 digits]Z with valid
// ranges (no leap second): a subset of both RFC 3339 as the validator
// checks it and of what time.Time.UnmarshalJSON accepts, decoded to the
// same instant in UTC.
func parseStrictTime(s string) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for _, c := range []byte(s[a:b]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 7)
	dd, ok3 := num(8, 10)
	hh, ok4 := num(11, 13)
	mi, ok5 := num(14, 16)
	ss, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || dd < 1 || hh > 23 || mi > 59 || ss > 59 {
		return time.Time{}, false
	}
	if dd > daysIn(time.Month(mo), y) {
		return time.Time{}, false
	}
	ns := 0
	rest := s[19 : len(s)-1]
	if rest != "" {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
			return time.Time{}, false
		}
		frac, ok := num(20, 19+len(rest))
		if !ok {
			return time.Time{}, false
		}
		for k := len(rest) - 1; k < 9; k++ {
			frac *= 10
		}
		ns = frac
	}
	return time.Date(y, time.Month(mo), dd, hh, mi, ss, ns, time.UTC), true
}

func daysIn(m time.Month, year int) int {
	switch m {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}
