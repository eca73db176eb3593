package mariadbd_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
)

// fakeBinaries writes a mariadbd and a mariadb-install-db that never
// return (sleep) into a directory of their own and returns it.
func fakeBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	hang := "#!/bin/sh\necho starting the bootstrap\nsleep 600\n"
	for _, name := range []string{"mariadbd", "mariadb-install-db"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(hang), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestHungInstallDBBounded: a mariadb-install-db that never returns ends
// the start within its bound (InstallTimeout, once: no second attempt),
// with ErrStart naming the program, the bound and its output, and leaves
// no directory behind; with the template as without it.
func TestHungInstallDBBounded(t *testing.T) {
	bin := fakeBinaries(t)
	for _, noTemplate := range []bool{true, false} {
		c := mariadbd.Config{BinDir: bin, Dir: t.TempDir(), TemplateDir: t.TempDir(), NoTemplate: noTemplate,
			InstallTimeout: 500 * time.Millisecond}
		t0 := time.Now()
		s, err := mariadbd.Start(t.Context(), c)
		took := time.Since(t0)
		if err == nil {
			s.Remove()
			t.Fatal("Start with a hung mariadb-install-db succeeded")
		}
		// One attempt: neither made again nor followed by a run without
		// the template.
		if took > 2*time.Second {
			t.Errorf("NoTemplate=%v: Start took %v; want about %v per attempt", noTemplate, took.Round(time.Millisecond), c.InstallTimeout)
		}
		for _, w := range []string{"mariadb-install-db did not finish within 500ms", filepath.Join(bin, "mariadb-install-db"),
			"killed", "starting the bootstrap"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("NoTemplate=%v: Start = %q; want it to say %q", noTemplate, err, w)
			}
		}
		if !errors.Is(err, mariadbd.ErrStart) {
			t.Errorf("Start = %v; want ErrStart", err)
		}
		if es := entries(t, c.Dir); len(es) != 0 {
			t.Errorf("left in %s: %v", c.Dir, es)
		}
	}
}
