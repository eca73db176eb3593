package archtest

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/orderflow-audit/orderflow-audit/"

// layers maps a package path (relative to the module, by longest prefix)
// to its layer; a package may import only from lower layers, or from its
// own subtree. Packages of one layer cannot import each other: checks/ and
// runner/ share one, so the verifier is blind to the runner by
// construction and the runner does not judge its own runs. The witness
// readers sit below the evidence format and know nothing of it.
var layers = []struct {
	prefix string
	layer  int
}{
	{"spec", 0}, {"schemas", 0}, {"invariants", 0}, {"migrations", 0}, {"internal/mariadbd", 0}, {"profiles", 0},
	{"internal/didyoumean", -1}, // a string helper below every layer
	{"witness", 1},
	{"evidence", 2},
	{"checks", 3}, {"runner", 3},
	{"reports", 4},
	// commands: spec/cmd/specgen writes the docs from spec, scripts/bbwrap
	// wraps a reference bundle as a black-box one.
	{"cmd", 5}, {"spec/cmd", 5}, {"scripts", 5},
	{"internal/archtest", 6},
}

func layerOf(pkg string) (string, int, bool) {
	best, layer := "", -1
	for _, l := range layers {
		if (pkg == l.prefix || strings.HasPrefix(pkg, l.prefix+"/")) && len(l.prefix) > len(best) {
			best, layer = l.prefix, l.layer
		}
	}
	return best, layer, best != ""
}

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"...")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the module has more", len(pkgs))
	}
	return pkgs
}

// TestImportsPointDown: no package imports a package of its own layer
// outside its subtree, or of a layer above it.
func TestImportsPointDown(t *testing.T) {
	for _, p := range list(t) {
		rel := strings.TrimPrefix(p.ImportPath, module)
		root, layer, ok := layerOf(rel)
		if !ok {
			t.Errorf("package %s is in no layer of this test (add it, and to docs/design.md)", rel)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			irel := strings.TrimPrefix(imp, module)
			iroot, ilayer, ok := layerOf(irel)
			switch {
			case !ok:
				t.Errorf("%s imports %s, which is in no layer", rel, irel)
			case iroot == root:
			case ilayer >= layer:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must point down", rel, layer, irel, ilayer)
			}
		}
	}
}

func TestLayerOf(t *testing.T) {
	for _, c := range []struct {
		pkg   string
		layer int
	}{{"checks/blackbox", 3}, {"runner/nemesis", 3}, {"internal/mariadbd", 0}, {"witness/binlog", 1}, {"evidence/bundle", 2}, {"spec/cmd/specgen", 5}, {"spec", 0}, {"checksum", -1}} {
		if _, l, _ := layerOf(c.pkg); l != c.layer {
			t.Errorf("layerOf(%s) = %d, want %d", c.pkg, l, c.layer)
		}
	}
}

// TestVerifierImportsNoRunner is the acceptance of issue 22 as the
// command it names: go list -deps ./checks/... names no runner package.
func TestVerifierImportsNoRunner(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"checks/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) {
			n++
		}
		if strings.HasPrefix(p, module+"runner") || strings.HasPrefix(p, module+"cmd") {
			t.Errorf("the verifier depends on %s", p)
		}
	}
	if n < 5 {
		t.Fatalf("go list -deps ./checks/... names %d packages of the module; expected more", n)
	}
}

// maxLines is the house limit of a non-test Go file.
const maxLines = 500

func TestNoLongFiles(t *testing.T) {
	for _, p := range list(t) {
		for _, f := range p.GoFiles {
			path := filepath.Join(p.Dir, f)
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			n, sc := 0, bufio.NewScanner(fh)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				n++
			}
			fh.Close()
			if n > maxLines {
				t.Errorf("%s has %d lines; the limit is %d: split it by what it holds", path, n, maxLines)
			}
		}
	}
}
