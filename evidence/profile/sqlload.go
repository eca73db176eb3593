package profile

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// SQLLoad is a load the audit's own client writes through the database,
// for a pipeline without an HTTP service: Statements run in one
// transaction per request, in order. A {{name}} in a statement is bound
// as a parameter (never pasted into the text), so it is written bare:
// VALUES ({{n}}, {{token}}), CONCAT('SKU-', {{n}}).
type SQLLoad struct {
	Statements []string `json:"statements"`
}

// SQLNames are the template names a load statement may use.
var SQLNames = []string{"n", "key", "token", "run", "topic", "db"}

// sqlStarts are the statements a load transaction may hold: those that
// neither end it nor change how it commits.
var sqlStarts = []string{"INSERT", "UPDATE", "DELETE", "REPLACE", "SELECT", "WITH", "DO", "SET @"}

var sqlPlaceholderRE = regexp.MustCompile(`^\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}`)

// SQLTemplate is one load statement read: Query is the statement with
// every {{name}} replaced by a ?, Names the names bound to them in order.
type SQLTemplate struct {
	Query string
	Names []string
}

// ParseSQLTemplate reads one load statement. It refuses a placeholder
// inside a quoted string or a comment (it would not be bound), a name
// outside SQLNames, more than one statement, and a statement that ends
// or changes the transaction (BEGIN, COMMIT, DDL, ...): the audit runs the
// statements in a transaction of its own and decides the request's
// outcome by its COMMIT.
func ParseSQLTemplate(stmt string) (SQLTemplate, error) {
	var (
		t    SQLTemplate
		b    strings.Builder
		semi bool // a ; was seen outside quotes and comments
	)
	for i := 0; i < len(stmt); i++ {
		c := stmt[i]
		if semi && !isBlank(c) {
			return t, fmt.Errorf("one statement per item: text after the ; (give each statement an item of its own)")
		}
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for ; j < len(stmt); j++ {
				if stmt[j] == '\\' && c != '`' {
					j++
					continue
				}
				if stmt[j] == c {
					if j+1 < len(stmt) && stmt[j+1] == c { // a doubled quote
						j++
						continue
					}
					break
				}
			}
			if j >= len(stmt) {
				return t, fmt.Errorf("unterminated %c quote", c)
			}
			if m := placeholderIn(stmt[i : j+1]); m != "" {
				return t, fmt.Errorf("%s inside a quoted string: a template is bound as a parameter, write it bare (CONCAT('x-', %s) to build a string)", m, m)
			}
			b.WriteString(stmt[i : j+1])
			i = j
		case c == '#' || (c == '-' && strings.HasPrefix(stmt[i:], "-- ")) || (c == '/' && strings.HasPrefix(stmt[i:], "/*")):
			end := len(stmt)
			if c == '/' {
				k := strings.Index(stmt[i+2:], "*/")
				if k < 0 {
					return t, fmt.Errorf("unterminated /* comment")
				}
				end = i + 2 + k + 2
			} else if k := strings.IndexByte(stmt[i:], '\n'); k >= 0 {
				end = i + k
			}
			if m := placeholderIn(stmt[i:end]); m != "" {
				return t, fmt.Errorf("%s inside a comment", m)
			}
			b.WriteString(stmt[i:end])
			i = end - 1
		case c == '{' && strings.HasPrefix(stmt[i:], "{{"):
			m := sqlPlaceholderRE.FindStringSubmatch(stmt[i:])
			if m == nil {
				return t, fmt.Errorf("a {{ that is not a template name")
			}
			if !slices.Contains(SQLNames, m[1]) {
				return t, fmt.Errorf("unknown template name {{%s}} (a load statement knows {{%s}})", m[1], strings.Join(SQLNames, "}} {{"))
			}
			t.Names = append(t.Names, m[1])
			b.WriteByte('?')
			i += len(m[0]) - 1
		case c == ';':
			semi = true
		default:
			b.WriteByte(c)
		}
	}
	t.Query = strings.TrimSpace(b.String())
	head := strings.ToUpper(strings.Join(strings.Fields(firstWords(t.Query)), " "))
	if !slices.ContainsFunc(sqlStarts, func(s string) bool { return strings.HasPrefix(head, s) }) {
		return t, fmt.Errorf("a load statement is one of %s: the audit runs them in a transaction of its own and ends it itself", strings.Join(sqlStarts, ", "))
	}
	return t, nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// firstWords is the start of q, for its keyword.
func firstWords(q string) string {
	if len(q) > 16 {
		return q[:16]
	}
	return q
}

// placeholderIn returns the first {{name}} in s, or "".
func placeholderIn(s string) string {
	i := strings.Index(s, "{{")
	if i < 0 {
		return ""
	}
	if m := sqlPlaceholderRE.FindString(s[i:]); m != "" {
		return m
	}
	return ""
}

// checkSQLLoad validates the load's statements at their lines, and that
// the correlation token reaches the database: a statement binds {{token}},
// or every name the token's template uses.
func (p *parser) checkSQLLoad(prof *Profile) {
	used, bad := map[string]bool{}, false
	for i, stmt := range prof.Load.SQL.Statements {
		ptr := fmt.Sprintf("/load/sql/statements/%d", i)
		t, err := ParseSQLTemplate(stmt)
		if err != nil {
			p.add(p.index[ptr].line, fieldPath(ptr, p.index), "%v", err)
			bad = true
			continue
		}
		for _, n := range t.Names {
			used[n] = true
		}
	}
	if used["token"] || bad {
		return
	}
	token := prof.Load.Token
	if token == "" {
		token = DefaultToken
	}
	for _, m := range placeholderRE.FindAllStringSubmatch(token, -1) {
		if !used[m[1]] {
			p.add(p.index["/load/sql/statements"].keyLine, "load.sql.statements",
				"no statement writes the correlation token: bind {{token}} where load.correlate reads it")
			return
		}
	}
}

var placeholderRE = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}`)
