// Package didyoumean suggests the candidate closest to a mistyped name: a
// command, a flag, a scenario id.
package didyoumean

import "strings"

// Suggest returns the candidate closest to name, or "" when none is close:
// a candidate equal to name but for case wins; otherwise the one at the
// smallest edit distance, if that distance is at most a third of name's
// length (at least 1, at most 3). Ties go to the earlier candidate.
func Suggest(name string, candidates []string) string {
	for _, c := range candidates {
		if strings.EqualFold(c, name) && c != name {
			return c
		}
	}
	best, bestD := "", -1
	limit := min(max(len(name)/3, 1), 3)
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := distance(strings.ToLower(name), strings.ToLower(c))
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// Hint is Suggest as a sentence to append to a message: " (did you mean
// X?)", or "".
func Hint(name string, candidates []string) string {
	if s := Suggest(name, candidates); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
}

// distance is the Levenshtein distance of a and b, by bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
