// Package sqlsplit splits the project's .sql files into statements. It is a
// leaf (standard library only) so that both migrations/ and the verifier in
// checks/ can use it without the verifier importing the migrations, whose
// DDL belongs to the system under test.
package sqlsplit

import "strings"

// Split drops "--" comment lines and splits on a ";" that ends a line. The
// .sql files are ours, so this small grammar is enough and keeps
// multiStatements off every connection.
func Split(body string) []string {
	var (
		stmts []string
		cur   strings.Builder
	)
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			s := strings.TrimSpace(cur.String())
			stmts = append(stmts, strings.TrimSuffix(s, ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		stmts = append(stmts, s)
	}
	return stmts
}
