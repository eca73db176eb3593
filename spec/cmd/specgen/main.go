// Command specgen writes the files that are generated from the spec, so
// that spec/ stays the one place a scenario, a fault point and a planted
// bug are declared:
//
//   - docs/scenarios.md: the scenario tables, suite by suite;
//   - README.md: the example observation lines and the scenario count;
//   - runner/internal/plant/bugs.go: a constant per planted bug.
//
// In the two Markdown files it replaces only what stands between marker
// comments (<!-- spec:begin NAME --> and <!-- spec:end NAME -->); the rest
// stays hand-written. Run it from anywhere in the module:
//
//	go generate ./spec        (or: go run ./spec/cmd/specgen)
//
// With -check it writes nothing and exits 1 when a file is out of date.
// TestGeneratedUpToDate fails in the same case.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("specgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "", "the module root (default: the directory of the go.mod at or above the working directory)")
	check := fs.Bool("check", false, "write nothing; name each out-of-date file and exit 1 if there is one")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *root == "" {
		r, err := moduleRoot()
		if err != nil {
			fmt.Fprintf(stderr, "specgen: %v\n", err)
			return 2
		}
		*root = r
	}
	stale := false
	for _, f := range outputs {
		path := filepath.Join(*root, f.path)
		old, want, err := generate(*root, f)
		if err != nil {
			fmt.Fprintf(stderr, "specgen: %v\n", err)
			return 1
		}
		if bytes.Equal(old, want) {
			continue
		}
		if *check {
			fmt.Fprintf(stdout, "%s is out of date\n", f.path)
			stale = true
			continue
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			fmt.Fprintf(stderr, "specgen: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s\n", f.path)
	}
	if stale {
		fmt.Fprintln(stdout, "run: go generate ./spec")
		return 1
	}
	return 0
}

// output is one generated file: render gets the file as it is (nil when
// it does not exist) and returns what it must be.
type output struct {
	path   string
	render func(old []byte) ([]byte, error)
}

// outputs are the generated files.
var outputs = []output{
	{"docs/scenarios.md", func(old []byte) ([]byte, error) { return replaceBlocks(old, scenarioBlocks()) }},
	{"README.md", func(old []byte) ([]byte, error) { return replaceBlocks(old, readmeBlocks()) }},
	{"runner/internal/plant/bugs.go", func([]byte) ([]byte, error) { return plantConstants() }},
}

// generate returns f's file as it is under root and as the spec makes it.
func generate(root string, f output) (old, want []byte, err error) {
	old, err = os.ReadFile(filepath.Join(root, f.path))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	want, err = f.render(old)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.path, err)
	}
	return old, want, nil
}

// moduleRoot is the directory of the go.mod at or above the working
// directory (go generate runs a generator in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory (use -root)")
		}
		dir = parent
	}
}
