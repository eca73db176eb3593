package evidence

import "strings"

// ScratchName is the database a run gives a scenario: "ofa_<run id>_<id>",
// lower case, '-' and '.' as '_', other characters dropped, at most 64
// characters (MySQL's limit on a name). The runner creates the database
// under this name and the verifier derives it on its own from the run id
// and the scenario id: one function, so the two cannot drift.
func ScratchName(parts ...string) string {
	var b strings.Builder
	b.WriteString("ofa")
	for _, p := range parts {
		b.WriteByte('_')
		for _, r := range strings.ToLower(p) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
				b.WriteRune(r)
			case r == '-' || r == '.':
				b.WriteByte('_')
			}
		}
	}
	s := b.String()
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}
