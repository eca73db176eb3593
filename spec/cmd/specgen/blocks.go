package main

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// A generated block of a Markdown file stands between
//
//	<!-- spec:begin NAME -->  and  <!-- spec:end NAME -->
//
// HTML comments, which GitHub does not render. A block that begins at the
// end of a line holds whole lines; one inside a line (the scenario count)
// holds a phrase.
var beginRE = regexp.MustCompile(`<!-- spec:begin ([a-zA-Z0-9 -]+) -->`)

func endMarker(name string) string { return "<!-- spec:end " + name + " -->" }

// replaceBlocks replaces the content of each named block of doc with
// blocks[name]. Every block in doc must have a renderer and every renderer
// its block: a marker deleted by hand or a block nothing fills is an
// error, not a silent skip.
func replaceBlocks(doc []byte, blocks map[string]string) ([]byte, error) {
	if doc == nil {
		return nil, fmt.Errorf("the file is missing (it holds hand-written text around the generated blocks)")
	}
	var out bytes.Buffer
	seen := map[string]bool{}
	rest := doc
	for {
		loc := beginRE.FindSubmatchIndex(rest)
		if loc == nil {
			out.Write(rest)
			break
		}
		name := string(rest[loc[2]:loc[3]])
		content, ok := blocks[name]
		if !ok {
			return nil, fmt.Errorf("block %q has no generator", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("block %q appears twice", name)
		}
		seen[name] = true
		end := bytes.Index(rest[loc[1]:], []byte(endMarker(name)))
		if end < 0 {
			return nil, fmt.Errorf("block %q has no %s", name, endMarker(name))
		}
		out.Write(rest[:loc[1]])
		if bytes.HasPrefix(rest[loc[1]:], []byte("\n")) {
			out.WriteString("\n" + content)
		} else {
			out.WriteString(strings.TrimSuffix(content, "\n"))
		}
		out.WriteString(endMarker(name))
		rest = rest[loc[1]+end+len(endMarker(name)):]
	}
	for _, name := range slices.Sorted(maps.Keys(blocks)) {
		if !seen[name] {
			return nil, fmt.Errorf("no block %q (its markers are missing)", name)
		}
	}
	return out.Bytes(), nil
}
