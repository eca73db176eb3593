package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/reports"
)

// docs/cli.md has one section per command; the part of each that the code
// knows (synopsis, summary, flags, example) is generated between the
// markers <!-- cli:begin NAME --> and <!-- cli:end NAME -->, and
// TestCLIDoc fails while it differs from what -h prints (go test
// ./cmd/orderflow-audit -run TestCLIDoc -update rewrites it). The prose
// around the markers is written by hand.

// cliDocBlock renders the generated part of command name's section.
func cliDocBlock(name string) (string, error) {
	c, ok := lookup(name)
	if !ok {
		return "", fmt.Errorf("no command %q", name)
	}
	// -h makes the command build its flag set and return.
	if code := c.run(context.Background(), []string{"-h"}, io.Discard, io.Discard); code != exitOK {
		return "", fmt.Errorf("%s -h exited %d", name, code)
	}
	made.Lock()
	f := made.sets[name]
	made.Unlock()
	var b strings.Builder
	if f == nil { // help and the like: no flags of their own
		fmt.Fprintf(&b, "```\n%s %s\n```\n\n%s.\n", progName, name, upperFirst(c.summary))
		return b.String(), nil
	}
	fmt.Fprintf(&b, "```\n%s %s\n```\n\n%s\n", progName, f.synopsis, strings.TrimSpace(f.about))
	var rows [][]string
	f.VisitAll(func(fl *flag.Flag) {
		value, usage := flag.UnquoteUsage(fl)
		value = placeholder(value)
		def := fl.DefValue
		switch def {
		case "", "false", "0", "0s", "[]":
			def = ""
		}
		prefix := "--"
		if len(fl.Name) == 1 {
			prefix = "-"
		}
		rows = append(rows, []string{"`" + prefix + fl.Name + "`", code(value), code(def), mdCell(usage)})
	})
	if len(rows) > 0 {
		b.WriteString("\n")
		var t bytes.Buffer
		if err := reports.MarkdownTable(&t, []string{"flag", "value", "default", "meaning"}, rows); err != nil {
			return "", err
		}
		b.Write(t.Bytes())
	}
	if f.example != "" {
		b.WriteString("\nExample:\n\n```sh\n")
		for _, l := range strings.Split(strings.TrimSpace(f.example), "\n") {
			fmt.Fprintf(&b, "%s\n", strings.TrimSpace(l))
		}
		b.WriteString("```\n")
	}
	return b.String(), nil
}

func code(s string) string {
	if s == "" {
		return " "
	}
	return "`" + s + "`"
}

// mdCell escapes a flag's usage for a table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "<", "&lt;")
	return strings.Join(strings.Fields(s), " ")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// rewriteCLIDoc returns doc with every generated block replaced, and the
// names of visible commands that have no section.
func rewriteCLIDoc(doc string) (string, []string, error) {
	var missing []string
	for _, c := range commands() {
		if c.hidden {
			continue
		}
		begin := "<!-- cli:begin " + c.name + " -->\n"
		end := "<!-- cli:end " + c.name + " -->"
		i := strings.Index(doc, begin)
		j := strings.Index(doc, end)
		if i < 0 || j < i {
			missing = append(missing, c.name)
			continue
		}
		block, err := cliDocBlock(c.name)
		if err != nil {
			return "", nil, err
		}
		doc = doc[:i+len(begin)] + block + doc[j:]
	}
	return doc, missing, nil
}
