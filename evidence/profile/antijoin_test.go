package profile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// TestParseAntiJoin: the reference's own invariants that are anti-joins
// (invariants/sql; not sent-without-effect, which holds each inbox
// consumer to every SENT event with a CROSS JOIN and a UNION: the
// profile states its one-consumer anti-join, and the effects rule is per
// consumer) read as such, both SQL forms mean the same, and what
// is not an anti-join is refused with a sentence.
func TestParseAntiJoin(t *testing.T) {
	for _, name := range []string{"effect-without-inbox", "inbox-without-effect", "orphan-effects", "orphan-sent"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "invariants", "sql", name+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		aj, err := profile.ParseAntiJoin(string(b))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if aj.Outer == "" || aj.Inner == "" || len(aj.On) == 0 || aj.NullColumn == "" {
			t.Errorf("%s: %+v", name, aj)
		}
	}
	left, err := profile.ParseAntiJoin("SELECT o.event_id FROM outbox o LEFT JOIN notification n ON n.event_id = o.event_id WHERE o.state = 'SENT' AND n.id IS NULL")
	if err != nil {
		t.Fatal(err)
	}
	exists, err := profile.ParseAntiJoin("select * from outbox where state = 'SENT' and not exists (select 1 from notification n where n.event_id = outbox.event_id);")
	if err != nil {
		t.Fatal(err)
	}
	if left.Outer != exists.Outer || left.Inner != exists.Inner || left.On[0] != exists.On[0] || left.Filters[0] != exists.Filters[0] || exists.NullColumn != "" {
		t.Errorf("the two forms differ:\n%+v\n%+v", left, exists)
	}
	for sql, want := range map[string]string{
		"SELECT n.event_id FROM notification n GROUP BY n.event_id HAVING COUNT(*) > 1":                            "want WHERE, found \"GROUP\"",
		"SELECT r.id FROM orders r LEFT JOIN outbox o ON o.event_id = CONCAT('e-', r.id) WHERE o.event_id IS NULL": "a function (CONCAT(...)) is not read",
		"SELECT * FROM a LEFT JOIN b ON b.x = a.y":                                                                 "want WHERE",
		"SELECT * FROM a x LEFT JOIN b y ON y.k = x.k WHERE y.k IS NULL OR x.s = 'A'":                              "unexpected",
		"SELECT * FROM a x LEFT JOIN b y ON y.k = x.k WHERE y.k IS NULL; DROP TABLE a":                             "unexpected",
		"SELECT * FROM a x LEFT JOIN b y ON x.s = 'A' WHERE y.k IS NULL":                                           "put it in WHERE",
		"SELECT * FROM a x LEFT JOIN b y ON y.k = x.k WHERE k IS NULL":                                             "name the table",
		"SELECT * FROM a x WHERE x.s = 'it''s' AND x.t = 'a\\'b'":                                                  "backslash",
		"SELECT * FROM other.a x LEFT JOIN b y ON y.k = x.k WHERE y.k IS NULL":                                     "another database",
		"SELECT * FROM a x LEFT JOIN b y ON y.k = x.k WHERE y.k IS NULL /* open":                                   "not closed",
	} {
		if _, err := profile.ParseAntiJoin(sql); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAntiJoin(%q) = %v; want an error saying %q", sql, err, want)
		}
	}
}

// TestProfileInvariants: a profile's invariants are read with the
// profile; one that is not an anti-join is a problem at its line.
func TestProfileInvariants(t *testing.T) {
	base := "name: x\ntopic: {name: t, event_id: {header: id}, key: none}\noutbox: {table: outbox, event_id: id, payload: {column: p}, progress: {kind: none}}\n"
	p, err := profile.Parse("p.yaml", []byte(base+"invariants:\n  - id: sent-without-effect\n    sql: SELECT o.id FROM outbox o LEFT JOIN effect e ON e.id = o.id WHERE e.id IS NULL\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Invariants) != 1 || p.Invariants[0].Join == nil || p.Invariants[0].Join.Inner != "effect" {
		t.Fatalf("invariants %+v", p.Invariants)
	}
	_, err = profile.Parse("p.yaml", []byte(base+"invariants:\n  - id: a\n    sql: SELECT 1\n  - id: a\n    sql: SELECT o.id FROM outbox o LEFT JOIN effect e ON e.id = o.id WHERE e.id IS NULL\n"))
	var pe *profile.Error
	if !errors.As(err, &pe) || len(pe.Problems) != 2 || pe.Problems[0].Line != 6 || pe.Problems[0].Field != "invariants[0].sql" || pe.Problems[1].Line != 7 {
		t.Fatalf("Parse = %v (%+v); want invariants[0].sql at line 6 and the duplicate id at line 7", err, pe)
	}
}
