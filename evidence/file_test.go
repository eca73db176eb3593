//go:build unix

package evidence_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// TestReadFileSpecial: an evidence path that names a FIFO or a device is
// bad input at once; before, a FIFO blocked the open until a writer came
// (forever), and a device was read up to the size limit.
func TestReadFileSpecial(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(p string) error
		want string
	}{
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "a FIFO"},
		{"symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "a character device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "u80.json")
			if err := tc.make(p); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() { _, _, err := evidence.ReadFile(p); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, evidence.ErrBadInput) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
					t.Fatalf("err = %v; want bad input naming %s as %s", err, p, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("ReadFile still waiting after 5 s")
			}
		})
	}
}
