package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The SQL mutations of the migrations, the schema-level bugs a developer
// writes: a unique key dropped or narrowed, a column type narrowed, a
// collation changed, an index or a check removed. Each rule rewrites one
// line of one CREATE TABLE; every match of a rule in a file is a mutant of
// its own.
var (
	uniqueRE  = regexp.MustCompile(`^(\s*)(UNIQUE KEY \w+|PRIMARY KEY)\s*\(([^)]*)\)(,?)\s*$`)
	plainKey  = regexp.MustCompile(`^\s*KEY \w+\s*\([^)]*\),?\s*$`)
	checkRE   = regexp.MustCompile(`^\s*CONSTRAINT \w+ CHECK\b.*$`)
	varcharRE = regexp.MustCompile(`\b(VAR)?CHAR\((\d+)\)`)
	bigintRE  = regexp.MustCompile(`\bBIGINT\b`)
	tsRE      = regexp.MustCompile(`\bTIMESTAMP\(6\)`)
	collateRE = regexp.MustCompile(`\bCOLLATE\s+(\w+)`)
	columnRE  = regexp.MustCompile(`^\s*\w+\s+(VAR)?CHAR\(\d+\)`)
)

type sqlRule struct {
	name string
	// rewrite returns the line's mutated forms (nil: the rule does not
	// apply). A form "" removes the line.
	rewrite func(line string) []string
}

var sqlRules = []sqlRule{
	{"unique-to-plain", func(l string) []string {
		m := uniqueRE.FindStringSubmatch(l)
		if m == nil {
			return nil
		}
		name := strings.TrimPrefix(m[2], "UNIQUE ")
		if m[2] == "PRIMARY KEY" {
			if !strings.Contains(m[3], ",") {
				return nil // an inline-style one-column key: the narrow rule has nothing to do either
			}
			name = "KEY mut_pk"
		}
		return []string{fmt.Sprintf("%s%s (%s)%s", m[1], name, m[3], m[4])}
	}},
	{"narrow-key", func(l string) []string {
		m := uniqueRE.FindStringSubmatch(l)
		if m == nil {
			return nil
		}
		cols := strings.Split(m[3], ",")
		if len(cols) < 2 {
			return nil
		}
		var out []string
		for i := range cols {
			rest := append(append([]string{}, cols[:i]...), cols[i+1:]...)
			for j := range rest {
				rest[j] = strings.TrimSpace(rest[j])
			}
			out = append(out, fmt.Sprintf("%s%s (%s)%s", m[1], m[2], strings.Join(rest, ", "), m[4]))
		}
		return out
	}},
	{"drop-index", func(l string) []string {
		if plainKey.MatchString(l) {
			return []string{""}
		}
		return nil
	}},
	{"drop-check", func(l string) []string {
		if checkRE.MatchString(l) {
			return []string{""}
		}
		return nil
	}},
	{"narrow-char", func(l string) []string {
		m := varcharRE.FindStringSubmatchIndex(l)
		if m == nil {
			return nil
		}
		n, _ := strconv.Atoi(l[m[4]:m[5]])
		if n < 4 {
			return nil
		}
		return []string{l[:m[4]] + strconv.Itoa(n/4) + l[m[5]:]}
	}},
	{"narrow-bigint", func(l string) []string {
		if !bigintRE.MatchString(l) || strings.Contains(l, "AUTO_INCREMENT") {
			return nil
		}
		return []string{bigintRE.ReplaceAllString(l, "INT")}
	}},
	{"narrow-timestamp", func(l string) []string {
		if !tsRE.MatchString(l) {
			return nil
		}
		return []string{strings.ReplaceAll(l, "TIMESTAMP(6)", "TIMESTAMP")}
	}},
	{"collation", func(l string) []string {
		if m := collateRE.FindStringSubmatchIndex(l); m != nil {
			to := "utf8mb4_bin"
			if strings.HasSuffix(l[m[2]:m[3]], "_bin") {
				to = "utf8mb4_general_ci"
			}
			return []string{l[:m[2]] + to + l[m[3]:]}
		}
		m := columnRE.FindStringIndex(l)
		if m == nil {
			return nil
		}
		var out []string
		for _, c := range []string{"utf8mb4_bin", "utf8mb4_general_ci"} {
			out = append(out, l[:m[1]]+" CHARACTER SET utf8mb4 COLLATE "+c+l[m[1]:])
		}
		return out
	}},
}

// sqlMutants lists the SQL mutants of every migration under root/migrations.
func sqlMutants(root string) ([]Mutant, error) {
	files, err := filepath.Glob(filepath.Join(root, "migrations", "*.up.sql"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Mutant
	for _, path := range files {
		if strings.HasSuffix(path, "_marker.up.sql") {
			continue // the tool's own table, not the system under test's
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(src), "\n")
		for _, r := range sqlRules {
			n := 0
			for i, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), "--") {
					continue
				}
				for _, form := range r.rewrite(l) {
					i, form, orig := i, form, l
					id := fmt.Sprintf("sql:%s:%s-%d", rel, r.name, n)
					n++
					what := fmt.Sprintf("%s -> %s", strings.TrimSpace(orig), strings.TrimSpace(form))
					if form == "" {
						what = "removes: " + strings.TrimSpace(orig)
					}
					out = append(out, Mutant{
						ID: id, File: rel, Line: i + 1, Col: 1, Type: "SQL_" + r.name, What: what,
						apply: func(b []byte) ([]byte, error) {
							ls := strings.Split(string(b), "\n")
							if i >= len(ls) || ls[i] != orig {
								return nil, fmt.Errorf("the file changed at line %d", i+1)
							}
							return []byte(strings.Join(replaceLine(ls, i, form), "\n")), nil
						},
					})
				}
			}
		}
	}
	return out, nil
}

// replaceLine puts form in place of line i; an empty form removes the line
// and, when it was the last item of its table, the comma before it.
func replaceLine(ls []string, i int, form string) []string {
	out := append([]string{}, ls...)
	if form != "" {
		out[i] = form
		return out
	}
	last := !strings.HasSuffix(strings.TrimSpace(ls[i]), ",")
	out = append(out[:i], out[i+1:]...)
	if last {
		for j := i - 1; j >= 0; j-- {
			t := strings.TrimRight(out[j], " \t")
			if t == "" || strings.HasPrefix(strings.TrimSpace(t), "--") {
				continue
			}
			out[j] = strings.TrimSuffix(t, ",")
			break
		}
	}
	return out
}
