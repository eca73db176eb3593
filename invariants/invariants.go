// Package invariants holds the business invariants of the chain, one
// anti-join per file (sql/<id>.sql), and their strict loader. The runner
// runs them on the live database at the end of every scenario; the
// verifier (checks/) runs the same files on the end state it replayed.
package invariants

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// The invariant queries: one anti-join per file, sql/<id>.sql, each opening
// with "--" comment lines that say what a returned row means. The runner
// runs the same files on the live database; the verifier runs them on the
// replayed end state. They must stay portable across MySQL, MariaDB and
// SQLite: plain SELECT, LEFT JOIN ... IS NULL, GROUP BY ... HAVING, no
// backticks, no trailing semicolon.
//
//go:embed sql/*.sql
var files embed.FS

// Invariant is one anti-join query: 0 rows means it holds.
type Invariant struct {
	ID      string // the file name without .sql, kebab-case
	Meaning string // what a returned row means (the file's opening comment)
	SQL     string // the SELECT, without comments
}

// ErrBad is returned for an invariant file that breaks the rules
// above.
var ErrBad = errors.New("bad invariant file")

var (
	invOnce sync.Once
	invList []Invariant
	invErr  error

	invNameRE = regexp.MustCompile(`^([a-z][a-z0-9]*(-[a-z0-9]+)*)\.sql$`)
)

// All returns the embedded invariants sorted by id. The files are
// parsed once; a malformed file is an error naming it.
func All() ([]Invariant, error) {
	invOnce.Do(func() { invList, invErr = Parse(files, "sql") })
	if invErr != nil {
		return nil, invErr
	}
	return append([]Invariant(nil), invList...), nil
}

// Parse reads every *.sql file of dir in fsys strictly.
func Parse(fsys fs.FS, dir string) ([]Invariant, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read invariants: %w", err)
	}
	var out []Invariant
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		m := invNameRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("%w: %s: name must be <kebab-case-id>.sql", ErrBad, e.Name())
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read invariant %s: %w", e.Name(), err)
		}
		inv, err := parseInvariant(m[1], string(body))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBad, e.Name(), err)
		}
		out = append(out, inv)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no invariant files in %s", ErrBad, dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func parseInvariant(id, body string) (Invariant, error) {
	lines := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	var meaning []string
	i := 0
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(t, "--") {
			break
		}
		if c := strings.TrimSpace(strings.TrimPrefix(t, "--")); c != "" {
			meaning = append(meaning, c)
		}
	}
	if len(meaning) == 0 {
		return Invariant{}, errors.New("must open with a -- comment saying what a returned row means")
	}
	var q []string
	for _, l := range lines[i:] {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "--") {
			return Invariant{}, errors.New("comments are allowed only at the top")
		}
		q = append(q, strings.TrimRight(l, " \t"))
	}
	sqlText := strings.TrimSpace(strings.Join(q, "\n"))
	switch {
	case sqlText == "":
		return Invariant{}, errors.New("no query after the comment")
	case !strings.HasPrefix(strings.ToUpper(sqlText), "SELECT"):
		return Invariant{}, errors.New("the query must be a single SELECT")
	case strings.Contains(sqlText, ";"):
		return Invariant{}, errors.New("no semicolon: the query is wrapped in SELECT COUNT(*) FROM (...)")
	case strings.Contains(sqlText, "`"):
		return Invariant{}, errors.New("no backticks: the query must run on SQLite too")
	}
	return Invariant{ID: id, Meaning: strings.Join(meaning, " "), SQL: sqlText}, nil
}

// RowQuerier is what CountRows needs: *sql.DB, *sql.Conn and *sql.Tx all
// satisfy it.
type RowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// CountQuery is the statement CountRows runs for inv.
func (inv Invariant) CountQuery() string {
	return "SELECT COUNT(*) FROM (\n" + inv.SQL + "\n) q"
}

// CountRows returns how many rows inv returns on db (0 = the invariant
// holds).
func CountRows(ctx context.Context, db RowQuerier, inv Invariant) (int64, error) {
	var n int64
	if err := db.QueryRowContext(ctx, inv.CountQuery()).Scan(&n); err != nil {
		return 0, fmt.Errorf("invariant %s: %w", inv.ID, err)
	}
	return n, nil
}
