package reports

import (
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// writeTable renders one GFM table of plain-text cells, each escaped
// (tablewriter's Markdown renderer does not escape).
func writeTable(w io.Writer, header []string, rows [][]string) error {
	md := make([][]string, len(rows))
	for i, r := range rows {
		md[i] = make([]string, len(r))
		for j, c := range r {
			md[i][j] = cell(c)
		}
	}
	return writeTableMD(w, header, md)
}

// MarkdownTable is writeTableMD for other renderers of Markdown (the
// generated docs/cli.md): cells are Markdown already, escaped by the caller.
func MarkdownTable(w io.Writer, header []string, rows [][]string) error {
	return writeTableMD(w, header, rows)
}

// writeTableMD renders one GFM table whose cells are Markdown already
// (links, code spans), escaped by the caller; a line break becomes <br>.
// Headers keep their case and nothing wraps, so that every row stays on
// one line.
func writeTableMD(w io.Writer, header []string, rows [][]string) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
	hs := make([]string, len(header))
	for i, h := range header {
		hs[i] = cell(h)
	}
	t.Header(hs)
	for _, r := range rows {
		if len(r) != len(header) {
			return fmt.Errorf("table row has %d cells; want %d", len(r), len(header))
		}
		cs := make([]string, len(r))
		for i, c := range r {
			c = strings.ReplaceAll(strings.ReplaceAll(c, "\r\n", "\n"), "\n", "<br>")
			if strings.TrimSpace(c) == "" {
				c = " "
			}
			cs[i] = c
		}
		if err := t.Append(cs); err != nil {
			return fmt.Errorf("table row: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	return nil
}

// link is a Markdown link to an anchor of this document, its text
// escaped.
func link(text, anchor string) string {
	return "[" + inline(text) + "](#" + anchor + ")"
}

// anchor is the id GitHub (and pandoc's gfm) gives a heading: its text
// lower-cased, everything but letters, digits, spaces, "-" and "_"
// dropped, spaces turned into "-". The text is the heading as a reader
// sees it (before Markdown escaping).
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// shortHash shows a sha256 by its first 12 hex digits; the full value is
// in the evidence file.
func shortHash(h string) string {
	if len(h) <= 16 {
		return h
	}
	return h[:12] + "…"
}

// inlineEscaper escapes text so that Markdown shows it literally: the
// characters that start emphasis, code, links, HTML or entities.
var inlineEscaper = strings.NewReplacer(
	`\`, `\\`,
	"`", "\\`",
	"*", `\*`,
	"_", `\_`,
	"[", `\[`,
	"]", `\]`,
	"~", `\~`,
	"|", `\|`,
	"<", "&lt;",
	">", "&gt;",
	"&", "&amp;",
)

// inline escapes text for a Markdown paragraph or list item (one line).
func inline(s string) string {
	s = strings.ReplaceAll(s, "\r\n", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	return inlineEscaper.Replace(s)
}

// cell escapes text for one table cell: inline escaping, line breaks as
// <br>, and "|" escaped so it does not split the cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	parts := strings.Split(s, "\n")
	for i, x := range parts {
		parts[i] = inlineEscaper.Replace(strings.TrimSpace(x))
	}
	out := strings.Join(parts, "<br>")
	if out == "" {
		return " "
	}
	return out
}

// code makes s safe inside a single-backtick code span.
func code(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "`", "'"), "\n", " ")
}

// fenceFor returns a backtick fence longer than any backtick run in body.
func fenceFor(body string) string {
	return strings.Repeat("`", max(3, backtickRun(body)+1))
}

// backtickRun is the length of the longest run of backticks in s.
func backtickRun(s string) int {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
