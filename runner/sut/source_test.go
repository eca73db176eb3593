package sut

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// TestReferenceSourceIsTheCheckout: the digest built into the binary is
// the digest of the reference implementation's files on disk (every .go
// file but tests, every .sql file of spec.ReferenceSources): no file of
// those packages escapes the embed patterns, and nothing else is in them.
func TestReferenceSourceIsTheCheckout(t *testing.T) {
	got, err := ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, dir := range spec.ReferenceSources {
		entries, err := os.ReadDir(filepath.Join("..", "..", dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() || !sourceFile(e.Name()) {
				continue
			}
			b, err := os.ReadFile(filepath.Join("..", "..", dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[dir+"/"+e.Name()] = b
		}
	}
	want := evidence.DigestSource(spec.ReferenceSources, files)
	if got.SHA256 != want.SHA256 || got.Files != want.Files || !slices.Equal(got.Packages, want.Packages) {
		t.Fatalf("ReferenceSource() = %+v; the checkout gives %+v", got, want)
	}
	if got.Files < 20 {
		t.Errorf("ReferenceSource() digests %d files; the reference implementation has more", got.Files)
	}
	if !slices.Equal(got.Packages, spec.ReferenceSources) {
		t.Errorf("packages %v; want spec.ReferenceSources %v", got.Packages, spec.ReferenceSources)
	}
}

// TestSourceDigestChangesWithAFile: one byte more in one file, or a file
// renamed, changes the digest.
func TestSourceDigestChangesWithAFile(t *testing.T) {
	base := evidence.DigestSource([]string{"a"}, map[string][]byte{"a/x.go": []byte("package a"), "a/y.go": []byte("package a")})
	for name, files := range map[string]map[string][]byte{
		"content": {"a/x.go": []byte("package a "), "a/y.go": []byte("package a")},
		"path":    {"a/x.go": []byte("package a"), "a/z.go": []byte("package a")},
		"missing": {"a/x.go": []byte("package a")},
	} {
		if d := evidence.DigestSource([]string{"a"}, files); d.SHA256 == base.SHA256 {
			t.Errorf("%s: the digest did not change", name)
		}
	}
}
