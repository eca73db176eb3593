package checks

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFalseAlarmConnKillSeed8 keeps the false alarm of issue 23 fixed: on
// a correct system, chaos --faults conn-kill --seed 8 --duration 8s
// claimed unknownResolved=2/2 and the verifier derived 1/2. One of the two
// commits of unknown outcome had committed: the binlog showed its inbox
// row, which the replay met (as an unlogged insert, resolvetx.go) before
// the commit_unknown, so the replay's inbox_reject found the row known and
// left the commit open. The bundle is the saved one, written by an older
// version: it still fails the proof-boundary checks of that version's
// matrix (proof-mismatch), and nothing else.
func TestFalseAlarmConnKillSeed8(t *testing.T) {
	dir := t.TempDir()
	untar(t, "testdata/cases/false-alarm-chaos-connkill-seed8.tar.gz", dir)
	v, err := Verify(t.Context(), filepath.Join(dir, "chaos-8", "u80.json"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	proof := 0
	for _, r := range v.Reasons {
		switch {
		case r.Status == Fail && r.Rule == "proof-mismatch":
			proof++
		case r.Status == Fail:
			t.Errorf("FAIL %s: %s (claimed %q, recomputed %q)", r.Rule, r.Message, r.Claimed, r.Recomputed)
		}
	}
	if proof == 0 {
		t.Error("the old version's matrix no longer fails proof-mismatch: is this still the saved bundle?")
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("%s leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
