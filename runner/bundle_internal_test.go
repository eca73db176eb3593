package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// smallDisk mounts a 2 MB tmpfs for the test (a normalChain bundle is
// about 130 KB) and returns it; it skips where mounting is not allowed
// (not root).
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a file in dir until the file system is full, and
// returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("fill the disk: %v", err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("fill the disk: %v", err)
			}
			return path
		}
	}
}

// bundleFiles returns the sha256 of every file under dir but the lock and
// the filler, by path: the bundle as a reader finds it.
func bundleFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "filler" || d.Name() == ".u80.lock" {
			return err
		}
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = hex.EncodeToString(sum[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// diskOpts are the options of a normalChain run (a private mariadbd)
// writing its bundle to out.
func diskOpts(t *testing.T, out string) Options {
	infratest.RequireMariaDB(t)
	return Options{Scenarios: []string{"normalChain"}, Out: out, Timeout: 30 * time.Second,
		Private: mariadbd.Config{Dir: t.TempDir()}}
}

// TestDiskFullKeepsPreviousBundle: a disk that fills while the binary log
// is copied and the broker's data directory completed makes the run an
// error (ErrBundleWrite, exit 2), never a passing run with a witness said
// to be missing, though the disk has room again for the evidence file;
// the previous bundle is left byte for byte, and no staging directory
// stays.
func TestDiskFullKeepsPreviousBundle(t *testing.T) {
	dir := smallDisk(t)
	failedWriteKeepsBundle(t, dir, func(string) func() {
		filler := fillDisk(t, dir)
		return func() { os.Remove(filler) } // room again for the evidence file
	}, "capture the binary log", "no space left on device", "of an earlier run is kept as it was")
}

// TestFailedFinalWriteKeepsBundle: a write of the evidence file that fails
// (here a file size limit set once the witnesses are captured: EFBIG)
// leaves the previous bundle whole: its logs are not replaced before the
// new evidence file is written.
func TestFailedFinalWriteKeepsBundle(t *testing.T) {
	var prev syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &prev); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_FSIZE, &prev)
	failedWriteKeepsBundle(t, t.TempDir(), func(string) func() {
		return func() {
			// The evidence file is about 15 KB; the logs are written.
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 4096, Max: prev.Max}); err != nil {
				t.Errorf("set a file size limit: %v", err)
			}
		}
	}, "write the evidence file", "file too large", "nothing was replaced")
}

// failedWriteKeepsBundle writes a bundle into dir with a normalChain run,
// then runs again with hook as testHookWitness and checks that the run
// fails with ErrBundleWrite saying want, and that the first bundle is
// left as it was, with nothing beside it.
func failedWriteKeepsBundle(t *testing.T, dir string, hook func(stage string) func(), want ...string) {
	t.Helper()
	out := filepath.Join(dir, "u80.json")
	if _, err := Run(t.Context(), diskOpts(t, out)); err != nil {
		t.Fatalf("the first run: %v", err)
	}
	before := bundleFiles(t, dir)
	testHookWitness = hook
	ev, err := Run(t.Context(), diskOpts(t, out))
	testHookWitness = nil
	if !errors.Is(err, ErrBundleWrite) || !errors.Is(err, evidence.ErrBadOutput) {
		t.Fatalf("Run = %v (summary %+v); want ErrBundleWrite and ErrBadOutput", err, evidenceSummary(ev))
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Run = %q; want it to say %q", err, w)
		}
	}
	after := bundleFiles(t, dir)
	for p, sum := range before {
		if after[p] != sum {
			t.Errorf("%s of the previous bundle changed or went missing", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was left by the failed run", p)
		}
	}
	if _, _, err := evidence.ReadFile(out); err != nil {
		t.Errorf("the previous evidence file no longer reads: %v", err)
	}
}

func evidenceSummary(ev *evidence.Evidence) any {
	if ev == nil {
		return nil
	}
	return ev.Summary
}

// TestHungInstallDBRunBounded: a run whose mariadb-install-db never
// returns ends within the install bound with the infrastructure
// unavailable (exit 3), naming the program, and writes nothing.
func TestHungInstallDBRunBounded(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"mariadbd", "mariadb-install-db"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\nsleep 600\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "u80.json")
	opts := Options{Scenarios: []string{"normalChain"}, Out: out, Private: mariadbd.Config{
		BinDir: bin, Dir: t.TempDir(), TemplateDir: t.TempDir(), InstallTimeout: 500 * time.Millisecond}}
	t0 := time.Now()
	_, err := Run(t.Context(), opts)
	if took := time.Since(t0); took > 3*time.Second {
		t.Errorf("Run took %v with a hung mariadb-install-db bounded by %v", took.Round(time.Millisecond), opts.Private.InstallTimeout)
	}
	if !errors.Is(err, infra.ErrUnavailable) || !strings.Contains(err.Error(), "mariadb-install-db did not finish within 500ms") {
		t.Errorf("Run = %v; want ErrUnavailable naming the hung mariadb-install-db", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s written (stat: %v)", out, err)
	}
}
