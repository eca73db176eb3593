package audit

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// A profile's commands, environment, readiness URL and load request are
// templates: {{name}} is replaced by the value the audit gives name. The
// names (docs/blackbox.md, "Templates"):
//
//	{{db}}             the database the pipeline's tables are in
//	{{dsn}}            a DSN (go-sql-driver form) of that database, direct
//	{{proxy.R.db}}     a DSN of that database through role R's proxy
//	                   (in R's own commands: this replica's proxy)
//	{{broker}}         the broker's bootstrap addresses, comma-separated
//	{{topic}}          the audited topic
//	{{run}}            the run id
//	{{replica}}        the replica's number, from 1 (roles only)
//	{{port}}, {{listen}}  a free port the audit chose for this replica, and
//	                   127.0.0.1:PORT (roles only; the same across restarts)
//	{{role.R}}         127.0.0.1:PORT of role R's first replica
//	{{n}}, {{key}}, {{token}}  the request's number (from 1), its
//	                   idempotency key and its correlation token (load only)
//
// A name the audit does not know is an error, said before anything starts.

var placeholderRE = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}`)

// vars are the values of a template's names.
type vars map[string]string

// with returns a copy of v with the pairs kv (name, value, ...) added.
func (v vars) with(kv ...string) vars {
	out := make(vars, len(v)+len(kv)/2)
	for k, s := range v {
		out[k] = s
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// expand replaces every {{name}} of s; what names an unknown value is an
// error naming it and where (what).
func (v vars) expand(what, s string) (string, error) {
	var bad []string
	out := placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		name := placeholderRE.FindStringSubmatch(m)[1]
		val, ok := v[name]
		if !ok {
			bad = append(bad, "{{"+name+"}}")
			return m
		}
		return val
	})
	if len(bad) > 0 {
		return "", fmt.Errorf("%s: unknown template name %s (known: %s)", what, strings.Join(bad, ", "), v.names())
	}
	return out, nil
}

func (v vars) names() string {
	var out []string
	for k := range v {
		out = append(out, "{{"+k+"}}")
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// splitWords splits a command line into words as a POSIX shell would for
// a simple command: blanks separate words; single quotes keep everything
// up to the next single quote; double quotes keep everything but a
// backslash before ", \ or $; a backslash outside quotes keeps the next
// character. No expansion, no pipes, no redirections: a role's command is
// run directly, without a shell, so that the process the audit signals is
// the pipeline's own.
func splitWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // a word is open
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`, s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated double quote in %q", s)
			}
			in = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			in = true
		case strings.IndexByte("|&;<>()`$*?", c) >= 0:
			return nil, fmt.Errorf("%q: a role's command is run without a shell; quote %q or wrap the command in sh -c '...'", s, string(c))
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return words, nil
}
