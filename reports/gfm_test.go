package reports

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
)

// newGFM is goldmark with GitHub's extensions; raw HTML (<br> in cells)
// is rendered as GitHub does.
func newGFM() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
}

// cellText is the text a reader sees in a cell: the cell rendered to HTML
// by goldmark, <br> as a line break, other tags dropped, entities
// resolved.
func cellText(md goldmark.Markdown, n ast.Node, src []byte) string {
	var b bytes.Buffer
	if err := md.Renderer().Render(&b, src, n); err != nil {
		return "render error: " + err.Error()
	}
	s := strings.ReplaceAll(b.String(), "<br>", "\n")
	s = htmlTag.ReplaceAllString(s, "")
	return html.UnescapeString(strings.TrimSpace(s))
}

var htmlTag = regexp.MustCompile(`<[^>]*>`)

// unescapedPipes counts the "|" of a table line that split cells, by the
// rule of GFM: a pipe preceded by a backslash does not.
func unescapedPipes(line []byte) int {
	n := 0
	for i, c := range line {
		if c == '|' && (i == 0 || line[i-1] != '\\') {
			n++
		}
	}
	return n
}

func lineAt(src []byte, pos int) []byte {
	start := bytes.LastIndexByte(src[:pos], '\n') + 1
	end := bytes.IndexByte(src[pos:], '\n')
	if end < 0 {
		return src[start:]
	}
	return src[start : pos+end]
}

// TestGFMTables parses every golden render with goldmark's GFM tables and
// checks that each row of each table has exactly the header's cells (the
// parser would silently pad or drop cells, so the source lines are counted
// too), that headers keep their case, and that a cell containing "|"
// stays one cell.
func TestGFMTables(t *testing.T) {
	md := newGFM()
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			src := renderCase(t, tc.dir, tc.verdict)
			doc := md.Parser().Parse(text.NewReader(src))
			var tables int
			headers := map[string]bool{}
			cells := map[string]bool{}
			_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
				tbl, ok := n.(*east.Table)
				if !ok || !entering {
					return ast.WalkContinue, nil
				}
				tables++
				cols := len(tbl.Alignments)
				for row := tbl.FirstChild(); row != nil; row = row.NextSibling() {
					got := 0
					for c := row.FirstChild(); c != nil; c = c.NextSibling() {
						if c.Lines().Len() == 0 {
							t.Errorf("table %d: a row was padded with an empty cell (too few cells in the source)", tables)
							continue
						}
						got++
						txt := cellText(md, c, src)
						if _, isHeader := row.(*east.TableHeader); isHeader {
							headers[txt] = true
						} else {
							cells[txt] = true
						}
					}
					if got != cols {
						t.Errorf("table %d: row with %d cells; want %d", tables, got, cols)
					}
					first := row.FirstChild()
					if first == nil || first.Lines().Len() == 0 {
						continue
					}
					line := lineAt(src, first.Lines().At(0).Start)
					if p := unescapedPipes(line); p != cols+1 {
						t.Errorf("table %d: source line has %d cell separators; want %d: %s", tables, p, cols+1, line)
					}
				}
				return ast.WalkSkipChildren, nil
			})
			if want := bytes.Count(src, []byte("\n|:--")); tables != want || tables < 6 {
				t.Errorf("goldmark found %d tables; the source has %d delimiter rows", tables, want)
			}
			for h := range headers {
				if strings.ToUpper(h) == h && strings.ToLower(h) != h {
					t.Errorf("header %q is upper-cased", h)
				}
			}
			for _, h := range []string{"suite", "scenario", "key figures", "boundary", "injection → recovery path", "accepted after recovery",
				"what a returned row means", "live result", "replayed result", "invariants logged at the end", "metric", "event log"} {
				if !headers[h] {
					t.Errorf("no table header %q (headers: %v)", h, headers)
				}
			}
			if tc.name == "fail" {
				const piped = "the stale mark (token v1) affected 1 row | the evidence claims 0"
				if !cells[piped] {
					t.Errorf("no cell reads %q: the pipe split it", piped)
				}
			}
			// A cell of the boundary table keeps its two lines (scenario,
			// status) as lines of one cell.
			found := false
			for c := range cells {
				if strings.HasPrefix(c, "sendBeforeMarkCrash\n") {
					found = true
				}
			}
			if !found {
				t.Errorf("no boundary cell with its scenario and status on two lines")
			}
		})
	}
}

func TestCellEscaping(t *testing.T) {
	md := newGFM()
	tests := []string{
		"a | b",
		`a\|b`,
		"x*y* _z_ `code` [link](u) <b>bold</b> & ~~s~~",
		"line one\nline two",
		"||",
		`\`,
	}
	var rows [][]string
	for _, s := range tests {
		rows = append(rows, []string{s, "x"})
	}
	var buf bytes.Buffer
	if err := writeTable(&buf, []string{"Text", "other"}, rows); err != nil {
		t.Fatal(err)
	}
	src := buf.Bytes()
	doc := md.Parser().Parse(text.NewReader(src))
	var got []string
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if row, ok := n.(*east.TableRow); ok && entering {
			if row.ChildCount() != 2 {
				t.Errorf("row with %d cells: %s", row.ChildCount(), lineAt(src, row.FirstChild().Lines().At(0).Start))
			}
			got = append(got, cellText(md, row.FirstChild(), src))
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	if len(got) != len(tests) {
		t.Fatalf("%d rows parsed; want %d:\n%s", len(got), len(tests), src)
	}
	for i, want := range tests {
		if got[i] != want {
			t.Errorf("cell %d reads %q; want %q", i, got[i], want)
		}
	}
	if !strings.Contains(string(src), "| Text ") {
		t.Errorf("header case changed:\n%s", src)
	}
}
