package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// goMutants reads one gremlins dry-run report (gremlins unleash --dry-run
// -o FILE PKGDIR) and returns its mutants, covered by the package's tests
// or not: the audit, not the unit tests, is what judges them.
func goMutants(root, report, pkgDir string) ([]Mutant, error) {
	raw, err := os.ReadFile(report)
	if err != nil {
		return nil, err
	}
	var r struct {
		Files []struct {
			Name      string `json:"file_name"`
			Mutations []struct {
				Type   string `json:"type"`
				Status string `json:"status"`
				Line   int    `json:"line"`
				Column int    `json:"column"`
			} `json:"mutations"`
		} `json:"files"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", report, err)
	}
	var out []Mutant
	for _, f := range r.Files {
		rel := filepath.ToSlash(filepath.Join(pkgDir, f.Name))
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			rel = filepath.ToSlash(f.Name) // a path from the module root
		}
		all, err := fileMutants(root, rel)
		if err != nil {
			return nil, err
		}
		for _, g := range f.Mutations {
			m, ok := all[place{g.Line, g.Column, g.Type}]
			if !ok {
				return nil, fmt.Errorf("%s:%d:%d: gremlins reports %s where mutapply finds no such token", rel, g.Line, g.Column, g.Type)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

type place struct {
	line, col int
	typ       string
}

// fileMutants returns every mutant gremlins' table allows in one file, by
// place, each with its stable id.
func fileMutants(root, rel string) (map[place]Mutant, error) {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(src), "\n")
	fset := token.NewFileSet()
	file := fset.AddFile(rel, fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	out := map[place]Mutant{}
	seen := map[string]int{}
	for {
		pos, tok, _ := s.Scan()
		if tok == token.EOF {
			break
		}
		p := fset.Position(pos)
		for _, typ := range tokenTypes[tok] {
			toTok, ok := tokenMutations[typ][tok]
			if !ok {
				continue
			}
			line := lines[p.Line-1]
			trimmed := strings.TrimLeft(line, " \t")
			key := fmt.Sprintf("%s|%s|%d", typ, trimmed, p.Column-(len(line)-len(trimmed)))
			n := seen[key]
			seen[key]++
			sum := sha256.Sum256([]byte(key))
			id := fmt.Sprintf("go:%s:%s-%d", rel, hex.EncodeToString(sum[:5]), n)
			offset := file.Offset(pos)
			from, to := tok.String(), toTok.String()
			out[place{p.Line, p.Column, typ}] = Mutant{
				ID: id, File: rel, Line: p.Line, Col: p.Column, Type: typ,
				What: fmt.Sprintf("%s -> %s in: %s", from, to, strings.TrimSpace(trimmed)),
				apply: func(b []byte) ([]byte, error) {
					if string(b[offset:offset+len(from)]) != from {
						return nil, fmt.Errorf("the file changed: %q is not at %d", from, offset)
					}
					out := append([]byte{}, b[:offset]...)
					out = append(out, to...)
					return append(out, b[offset+len(from):]...), nil
				},
			}
		}
	}
	return out, nil
}

// find returns the mutant with this id in the tree.
func find(root, id string) (Mutant, error) {
	kind, rest, _ := strings.Cut(id, ":")
	i := strings.LastIndex(rest, ":")
	if i < 0 {
		return Mutant{}, fmt.Errorf("malformed mutant id %q", id)
	}
	rel := rest[:i]
	var all []Mutant
	switch kind {
	case "go":
		ms, err := fileMutants(root, rel)
		if err != nil {
			return Mutant{}, err
		}
		for _, m := range ms {
			all = append(all, m)
		}
	case "sql":
		ms, err := sqlMutants(root)
		if err != nil {
			return Mutant{}, err
		}
		all = ms
	default:
		return Mutant{}, fmt.Errorf("malformed mutant id %q", id)
	}
	for _, m := range all {
		if m.ID == id {
			return m, nil
		}
	}
	return Mutant{}, fmt.Errorf("no mutant %s in this tree", id)
}
