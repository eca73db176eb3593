package broker

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// committedDataDirs are the kfake data directories of the committed
// bundles: real runs, which the checks must all accept.
func committedDataDirs(t testing.TB) []string {
	t.Helper()
	var dirs []string
	for _, root := range []string{"../../evidence/example", "../../checks/testdata"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "kafka" && filepath.Base(filepath.Dir(p)) == "witness" {
				dirs = append(dirs, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(dirs) < 3 {
		t.Fatalf("found only %d committed data directories", len(dirs))
	}
	return dirs
}

func TestPlanCommittedDataDirs(t *testing.T) {
	for _, d := range committedDataDirs(t) {
		p, err := planDataFS(t.Context(), os.DirFS(d))
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		t.Logf("%s: %d files to copy, %d bytes read", d, len(p.files), p.size)
	}
}
