package sut

import (
	"embed"
	"io/fs"
	"path"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/migrations"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
)

// source is this package's Go source (see ReferenceSource).
//
//go:embed *.go
var source embed.FS

// sourcePackages are the directories of the reference system under test,
// relative to the module root, with their embedded files: the order
// service, the relay, the consumer, the planted bugs, this seam, and the
// migrations that make its tables.
var sourcePackages = []struct {
	dir string
	fs  fs.FS
}{
	{"migrations", migrations.Source},
	{"runner/internal/consumer", consumer.Source},
	{"runner/internal/orders", orders.Source},
	{"runner/internal/plant", plant.Source},
	{"runner/internal/relay", relay.Source},
	{"runner/sut", source},
}

// ReferenceSource digests the source of the reference implementation as
// it was built into this binary: every .go file (tests left out) and .sql
// file of its packages. The files are embedded at build time, so the
// digest is of the code that runs, not of a checkout that may have moved
// on; TestReferenceSourceIsTheCheckout holds the list against the files on
// disk.
func ReferenceSource() (evidence.SourceDigest, error) {
	files := map[string][]byte{}
	var dirs []string
	for _, p := range sourcePackages {
		dirs = append(dirs, p.dir)
		names, err := fs.Glob(p.fs, "*")
		if err != nil {
			return evidence.SourceDigest{}, err
		}
		for _, name := range names {
			if !sourceFile(name) {
				continue
			}
			b, err := fs.ReadFile(p.fs, name)
			if err != nil {
				return evidence.SourceDigest{}, err
			}
			files[path.Join(p.dir, name)] = b
		}
	}
	return evidence.DigestSource(dirs, files), nil
}

// sourceFile tells whether a file of a package is part of the code that
// runs: Go source but its tests, and SQL.
func sourceFile(name string) bool {
	return (strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) || strings.HasSuffix(name, ".sql")
}
