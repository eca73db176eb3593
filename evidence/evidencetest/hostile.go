//go:build unix

package evidencetest

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// Hostile files for the tests of the bundle gate and of what reads
// through it (evidence/bundle, checks, checks/crosscheck): a FIFO, a
// character device, a sparse file, and a deadline under which a read of
// one must end.

// GateDeadline is how long a refusal by the gate may take: it refuses
// from Lstat and fstat, without reading the file.
const GateDeadline = 10 * time.Second

// Within runs fn under GateDeadline and fails the test when it is still
// running then (a hung fn is left behind, ended with the test binary).
func Within[T any](t *testing.T, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	start := time.Now()
	go func() { done <- fn() }()
	select {
	case v := <-done:
		t.Logf("took %s", time.Since(start).Round(time.Millisecond))
		return v
	case <-time.After(GateDeadline):
		t.Fatalf("still running after %s", GateDeadline)
		var zero T
		return zero
	}
}

// Mkfifo makes a FIFO at p (a read of it blocks until a writer comes);
// the test is skipped where that is not allowed.
func Mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// MknodZero makes a character device at p as /dev/zero (1:5: endless
// zeros); the test is skipped without the privilege.
func MknodZero(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o644, 0x0105); err != nil {
		t.Skipf("mknod (needs root): %v", err)
	}
}

// SparseFile makes a file of size bytes at p that takes no disk space.
func SparseFile(t *testing.T, p string, size int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}
