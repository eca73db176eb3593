// Command mutapply lists and applies the automatic mutants of
// scripts/mutants.sh -a: gremlins' mutants of the system under test's Go
// source, and rule-based mutations of its migrations.
//
// gremlins (github.com/go-gremlins/gremlins) finds the mutants: its
// dry run writes each one's file, line, column and mutation type. gremlins
// can only judge a mutant by `go test`; the audit judges it by `run` and
// `verify`, so this command applies one mutant to a tree, with gremlins'
// own token table (tokens.go), and the shell script does the rest.
//
// usage:
//
//	mutapply list ROOT GREMLINS.json PKGDIR [GREMLINS.json PKGDIR ...]
//	mutapply list-sql ROOT
//	mutapply apply ROOT ID
//
// list prints one mutant per line, tab-separated: its id, its place
// (file:line:col), its type and what it changes. The id does not depend on
// the line number (a file whose earlier lines change keeps its mutants'
// ids), so a triage list keyed by id (scripts/mutants/equivalent.tsv)
// stays valid while the code around a mutant moves. apply finds the mutant
// by id again and rewrites its file in place.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mutapply:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: mutapply list ROOT GREMLINS.json PKGDIR ... | list-sql ROOT | apply ROOT ID")
	}
	root := args[1]
	switch args[0] {
	case "list":
		rest := args[2:]
		if len(rest) == 0 || len(rest)%2 != 0 {
			return fmt.Errorf("list wants pairs of GREMLINS.json PKGDIR")
		}
		var all []Mutant
		for i := 0; i < len(rest); i += 2 {
			ms, err := goMutants(root, rest[i], rest[i+1])
			if err != nil {
				return err
			}
			all = append(all, ms...)
		}
		printMutants(all)
		return nil
	case "list-sql":
		ms, err := sqlMutants(root)
		if err != nil {
			return err
		}
		printMutants(ms)
		return nil
	case "apply":
		if len(args) != 3 {
			return fmt.Errorf("apply wants ROOT ID")
		}
		return apply(root, args[2])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// Mutant is one change to one file of the tree.
type Mutant struct {
	ID    string // stable: see the package comment
	File  string // relative to the root, slash-separated
	Line  int
	Col   int
	Type  string // a gremlins mutation type, or SQL_<rule>
	What  string // what it changes, for a person
	apply func(src []byte) ([]byte, error)
}

func printMutants(ms []Mutant) {
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].File != ms[j].File {
			return ms[i].File < ms[j].File
		}
		if ms[i].Line != ms[j].Line {
			return ms[i].Line < ms[j].Line
		}
		if ms[i].Col != ms[j].Col {
			return ms[i].Col < ms[j].Col
		}
		return ms[i].Type < ms[j].Type
	})
	for _, m := range ms {
		fmt.Printf("%s\t%s:%d:%d\t%s\t%s\n", m.ID, m.File, m.Line, m.Col, m.Type, m.What)
	}
}

// apply finds the mutant with this id among the tree's Go mutants (their
// ids are derived from the source, so no gremlins run is needed: every
// mutable token of every Go file under the listed packages is a candidate)
// and its SQL mutants, and writes it.
func apply(root, id string) error {
	m, err := find(root, id)
	if err != nil {
		return err
	}
	path := filepath.Join(root, filepath.FromSlash(m.File))
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := m.apply(src)
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	return os.WriteFile(path, out, 0o644)
}
