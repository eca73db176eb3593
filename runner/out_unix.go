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
// the actor processes of the run do not inherit the lock.
func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
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
	return f, nil
}
