package profile

import (
	"fmt"
	"strings"
)

// Invariant is a user's invariant over the pipeline's tables: SQL that
// returns a row for each violation, read as an anti-join (ParseAntiJoin)
// so that the verifier can run it on the tables rebuilt from the binlog
// without a database.
type Invariant struct {
	ID  string `json:"id"`
	SQL string `json:"sql"`
	// Join is SQL read; set by Load.
	Join *AntiJoin `json:"-"`
}

// AntiJoin is an invariant of the one shape the verifier evaluates: the
// rows of Outer that pass every Filter and that no row of Inner matches
// on every condition of On. Both SQL forms of it are read:
//
//	SELECT o.x FROM outer o LEFT JOIN inner i ON i.a = o.b [AND ...]
//	  WHERE i.c IS NULL [AND o.y = 'v' ...]
//	SELECT o.x FROM outer o
//	  WHERE NOT EXISTS (SELECT 1 FROM inner i WHERE i.a = o.b [AND ...]) [AND o.y = 'v' ...]
//
// With LEFT JOIN, a matching inner row whose NullColumn is NULL yields a
// row too, as in SQL.
type AntiJoin struct {
	Outer, Inner string
	On           []JoinCond
	Filters      []Filter
	// NullColumn is the inner column of LEFT JOIN ... WHERE i.c IS NULL;
	// empty for NOT EXISTS.
	NullColumn string
}

// JoinCond is one equality of the join: an inner column equal to an
// outer column, or to a literal.
type JoinCond struct {
	Inner string
	Outer string   // empty when Literal is set
	Lit   *Literal `json:",omitempty"`
}

// Filter is one condition on the outer row.
type Filter struct {
	Column string
	Op     string // =, <>, is-null, is-not-null
	Lit    Literal
}

// Literal is a SQL string or number literal.
type Literal struct {
	Text   string
	Number bool
}

// ParseAntiJoin reads sql as an AntiJoin, or says in a sentence why it
// is not one of the two forms the verifier reads.
func ParseAntiJoin(sql string) (*AntiJoin, error) {
	toks, err := lexSQL(sql)
	if err != nil {
		return nil, err
	}
	p := &sqlParser{toks: toks}
	aj, err := p.statement()
	if err != nil {
		return nil, fmt.Errorf("%w (the verifier reads anti-joins only: SELECT ... FROM a LEFT JOIN b ON b.x = a.y ... WHERE b.z IS NULL, "+
			"or SELECT ... FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.x = a.y ...), with filters col = literal, col <> literal, col IS [NOT] NULL on a)", err)
	}
	return aj, nil
}

type sqlTok struct {
	kind byte // 'i' identifier, 's' string, 'n' number, 'p' punctuation
	text string
}

func lexSQL(s string) ([]sqlTok, error) {
	var out []sqlTok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("a comment /* is not closed")
			}
			i += end + 4
		case isIdentStart(c):
			j := i
			for j < len(s) && (isIdentStart(s[j]) || (s[j] >= '0' && s[j] <= '9')) {
				j++
			}
			out = append(out, sqlTok{'i', s[i:j]})
			i = j
		case c == '`':
			end := strings.IndexByte(s[i+1:], '`')
			if end < 0 {
				return nil, fmt.Errorf("a quoted name ` is not closed")
			}
			out = append(out, sqlTok{'i', s[i+1 : i+1+end]})
			i += end + 2
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("a string ' is not closed")
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				if s[j] == '\\' {
					return nil, fmt.Errorf("a backslash in a string literal is not read (its meaning depends on the server's SQL mode)")
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, sqlTok{'s', b.String()})
			i = j + 1
		case c >= '0' && c <= '9' || (c == '-' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9'):
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			out = append(out, sqlTok{'n', s[i:j]})
			i = j
		case c == '<' && i+1 < len(s) && s[i+1] == '>', c == '!' && i+1 < len(s) && s[i+1] == '=':
			out = append(out, sqlTok{'p', "<>"})
			i += 2
		case strings.IndexByte("(),=*;.<>+-/", c) >= 0:
			out = append(out, sqlTok{'p', string(c)})
			i++
		default:
			return nil, fmt.Errorf("unexpected character %q", c)
		}
	}
	return out, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// sqlKeywords cannot be aliases.
var sqlKeywords = map[string]bool{"select": true, "from": true, "where": true, "left": true, "outer": true, "join": true, "on": true,
	"and": true, "or": true, "not": true, "exists": true, "is": true, "null": true, "as": true, "inner": true, "group": true,
	"having": true, "order": true, "limit": true, "union": true, "right": true, "cross": true, "by": true}

type sqlParser struct {
	toks []sqlTok
	pos  int
	// aliases name the tables: alias (or the table itself) -> outer or inner.
	outerNames, innerNames map[string]bool
}

func (p *sqlParser) peek() sqlTok {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return sqlTok{}
}

func (p *sqlParser) keyword(k string) bool {
	t := p.peek()
	if t.kind == 'i' && strings.EqualFold(t.text, k) {
		p.pos++
		return true
	}
	return false
}

func (p *sqlParser) punct(s string) bool {
	if t := p.peek(); t.kind == 'p' && t.text == s {
		p.pos++
		return true
	}
	return false
}

func (p *sqlParser) expect(k string) error {
	if p.keyword(k) || p.punct(k) {
		return nil
	}
	return fmt.Errorf("want %s, found %s", strings.ToUpper(k), p.found())
}

func (p *sqlParser) found() string {
	t := p.peek()
	if t.kind == 0 {
		return "the end"
	}
	return fmt.Sprintf("%q", t.text)
}

func (p *sqlParser) statement() (*AntiJoin, error) {
	if err := p.expect("select"); err != nil {
		return nil, err
	}
	if err := p.selectList(); err != nil {
		return nil, err
	}
	if err := p.expect("from"); err != nil {
		return nil, err
	}
	aj := &AntiJoin{}
	var err error
	if aj.Outer, p.outerNames, err = p.tableRef(); err != nil {
		return nil, err
	}
	if p.keyword("left") {
		p.keyword("outer")
		if err := p.leftJoin(aj); err != nil {
			return nil, err
		}
	} else if err := p.where(aj, false); err != nil {
		return nil, err
	}
	if aj.Inner == "" {
		return nil, fmt.Errorf("no LEFT JOIN and no NOT EXISTS: not an anti-join")
	}
	p.punct(";")
	if p.pos < len(p.toks) {
		return nil, fmt.Errorf("unexpected %s after the statement", p.found())
	}
	return aj, nil
}

// selectList accepts *, or columns: what is selected does not change
// how many rows the anti-join returns.
func (p *sqlParser) selectList() error {
	if p.punct("*") {
		return nil
	}
	for {
		if _, _, err := p.colRef(); err != nil {
			return err
		}
		if !p.punct(",") {
			return nil
		}
	}
}

func (p *sqlParser) tableRef() (string, map[string]bool, error) {
	t := p.peek()
	if t.kind != 'i' || sqlKeywords[strings.ToLower(t.text)] {
		return "", nil, fmt.Errorf("want a table name, found %s", p.found())
	}
	p.pos++
	if p.punct(".") {
		return "", nil, fmt.Errorf("a table of another database (%s.) is not read: the audit reads the target database", t.text)
	}
	names := map[string]bool{t.text: true}
	p.keyword("as")
	if a := p.peek(); a.kind == 'i' && !sqlKeywords[strings.ToLower(a.text)] {
		p.pos++
		names = map[string]bool{a.text: true}
	}
	return t.text, names, nil
}

// colRef reads [qualifier.]column.
func (p *sqlParser) colRef() (qual, col string, err error) {
	t := p.peek()
	if t.kind != 'i' || sqlKeywords[strings.ToLower(t.text)] {
		return "", "", fmt.Errorf("want a column, found %s", p.found())
	}
	p.pos++
	if p.peek().kind == 'p' && p.peek().text == "(" {
		return "", "", fmt.Errorf("a function (%s(...)) is not read: compare columns and literals", t.text)
	}
	if !p.punct(".") {
		return "", t.text, nil
	}
	c := p.peek()
	if c.kind != 'i' {
		return "", "", fmt.Errorf("want a column after %s., found %s", t.text, p.found())
	}
	p.pos++
	return t.text, c.text, nil
}

// side says which table a column belongs to: 'o' outer, 'i' inner.
func (p *sqlParser) side(qual, col string) (byte, error) {
	switch {
	case qual == "" && p.innerNames != nil:
		return 0, fmt.Errorf("name the table of column %s (alias.%s): two tables are in the query", col, col)
	case qual == "" || p.outerNames[qual]:
		return 'o', nil
	case p.innerNames[qual]:
		return 'i', nil
	}
	return 0, fmt.Errorf("%s.%s names no table of the query", qual, col)
}

func (p *sqlParser) literal() (Literal, bool) {
	switch t := p.peek(); t.kind {
	case 's':
		p.pos++
		return Literal{Text: t.text}, true
	case 'n':
		p.pos++
		return Literal{Text: t.text, Number: true}, true
	}
	return Literal{}, false
}

func (p *sqlParser) leftJoin(aj *AntiJoin) error {
	if err := p.expect("join"); err != nil {
		return err
	}
	var err error
	if aj.Inner, p.innerNames, err = p.tableRef(); err != nil {
		return err
	}
	if err := p.expect("on"); err != nil {
		return err
	}
	if aj.On, err = p.conds(); err != nil {
		return err
	}
	return p.where(aj, true)
}

// conds reads inner = outer or inner = literal, joined by AND.
func (p *sqlParser) conds() ([]JoinCond, error) {
	var out []JoinCond
	for {
		q1, c1, err := p.colRef()
		if err != nil {
			return nil, err
		}
		if err := p.expect("="); err != nil {
			return nil, fmt.Errorf("a join condition is an equality: %w", err)
		}
		s1, err := p.side(q1, c1)
		if err != nil {
			return nil, err
		}
		if lit, ok := p.literal(); ok {
			if s1 != 'i' {
				return nil, fmt.Errorf("the join condition on %s compares the outer table with a literal: put it in WHERE", c1)
			}
			out = append(out, JoinCond{Inner: c1, Lit: &lit})
		} else {
			q2, c2, err := p.colRef()
			if err != nil {
				return nil, err
			}
			s2, err := p.side(q2, c2)
			if err != nil {
				return nil, err
			}
			switch {
			case s1 == 'i' && s2 == 'o':
				out = append(out, JoinCond{Inner: c1, Outer: c2})
			case s1 == 'o' && s2 == 'i':
				out = append(out, JoinCond{Inner: c2, Outer: c1})
			default:
				return nil, fmt.Errorf("the join condition %s = %s does not compare the two tables", c1, c2)
			}
		}
		if !p.keyword("and") {
			return out, nil
		}
	}
}

// where reads the outer WHERE: filters on the outer table, and, after a
// LEFT JOIN, exactly one inner IS NULL; without one, exactly one NOT
// EXISTS subquery.
func (p *sqlParser) where(aj *AntiJoin, joined bool) error {
	if err := p.expect("where"); err != nil {
		return err
	}
	for {
		if p.keyword("not") {
			if joined || aj.Inner != "" {
				return fmt.Errorf("one anti-join per invariant")
			}
			if err := p.notExists(aj); err != nil {
				return err
			}
		} else {
			q, c, err := p.colRef()
			if err != nil {
				return err
			}
			s, err := p.side(q, c)
			if err != nil {
				return err
			}
			f, err := p.filter(c)
			if err != nil {
				return err
			}
			switch {
			case s == 'i' && joined && f.Op == "is-null" && aj.NullColumn == "":
				aj.NullColumn = c
			case s == 'i':
				return fmt.Errorf("the condition on %s.%s is not the one IS NULL of the joined table", q, c)
			default:
				aj.Filters = append(aj.Filters, f)
			}
		}
		if !p.keyword("and") {
			break
		}
	}
	if joined && aj.NullColumn == "" {
		return fmt.Errorf("a LEFT JOIN without WHERE <joined>.<column> IS NULL returns every row: not an anti-join")
	}
	return nil
}

func (p *sqlParser) filter(col string) (Filter, error) {
	if p.keyword("is") {
		op := "is-null"
		if p.keyword("not") {
			op = "is-not-null"
		}
		return Filter{Column: col, Op: op}, p.expect("null")
	}
	var op string
	switch {
	case p.punct("="):
		op = "="
	case p.punct("<>"):
		op = "<>"
	default:
		return Filter{}, fmt.Errorf("want =, <> or IS [NOT] NULL after %s, found %s", col, p.found())
	}
	lit, ok := p.literal()
	if !ok {
		return Filter{}, fmt.Errorf("want a literal after %s %s, found %s", col, op, p.found())
	}
	return Filter{Column: col, Op: op, Lit: lit}, nil
}

func (p *sqlParser) notExists(aj *AntiJoin) error {
	if err := p.expect("exists"); err != nil {
		return err
	}
	if err := p.expect("("); err != nil {
		return err
	}
	if err := p.expect("select"); err != nil {
		return err
	}
	if _, ok := p.literal(); !ok {
		if err := p.selectList(); err != nil {
			return err
		}
	}
	if err := p.expect("from"); err != nil {
		return err
	}
	var err error
	if aj.Inner, p.innerNames, err = p.tableRef(); err != nil {
		return err
	}
	if err := p.expect("where"); err != nil {
		return err
	}
	if aj.On, err = p.conds(); err != nil {
		return err
	}
	return p.expect(")")
}
