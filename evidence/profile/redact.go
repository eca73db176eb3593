package profile

import (
	"regexp"
	"strings"
)

// Redacted stands where a secret was.
const Redacted = "xxxxx"

// dsnLineRE finds a dsn: value in the raw text, so that its password is
// known before the YAML is parsed: a message about a profile that does
// not even parse must not show it either.
var dsnLineRE = regexp.MustCompile(`(?m)^\s*-?\s*["']?dsn["']?\s*:\s*(.*?)\s*(?:#.*)?$`)

// userinfoRE matches "user:password@" in any DSN or URL form.
var userinfoRE = regexp.MustCompile(`([A-Za-z0-9_.%+-]*):([^@\s/"']+)@`)

// findSecrets returns the passwords of the DSNs in data, longest first.
func findSecrets(data []byte) []string {
	var out []string
	for _, m := range dsnLineRE.FindAllSubmatch(data, -1) {
		v := strings.Trim(string(m[1]), `"'{} `)
		for _, u := range userinfoRE.FindAllStringSubmatch(v, -1) {
			out = append(out, u[2])
		}
	}
	return out
}

// Redact returns s with every password of dsn, and any "user:password@"
// left, replaced by Redacted.
func Redact(s, dsn string) string {
	return redactAll(s, findSecrets([]byte("dsn: "+dsn)))
}

func (p *parser) redact(s string) string { return redactAll(s, p.secrets) }

func redactAll(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 && sec != Redacted { // shorter ones only inside user:password@, below
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return userinfoRE.ReplaceAllString(s, "${1}:"+Redacted+"@")
}
