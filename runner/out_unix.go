//go:build unix

package runner

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// errLocked: openLock found the lock held.
var errLocked = errors.New("locked")

// openLock opens (creating it) the lock file at path, not following a
// symlink, and takes an exclusive flock on it without waiting: errLocked
// when another process holds it. The descriptor is close-on-exec, so that
// the actor processes of the run do not inherit the lock. A holder removes
// the file before it lets go (lockOut): a lock taken on a file that is no
// longer at path is let go and path opened again.
func openLock(path string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("%s is not a regular file", path)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, errLocked
			}
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		if now, err := os.Lstat(path); err == nil && os.SameFile(st, now) {
			return f, nil
		}
		f.Close()
		if attempt == 10 {
			return nil, errLocked // another run keeps taking it
		}
	}
}
