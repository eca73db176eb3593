//go:build !linux

package runner

import (
	"errors"
	"os"
)

// errNoExchange: the file system cannot exchange two names in one step
// (renameat2 is Linux's): the previous logs are moved aside instead.
var errNoExchange = errors.New("the file system cannot exchange two paths atomically")

// errLocked: openLock found the lock held (never, here).
var errLocked = errors.New("locked")

func exchange(a, b string) error { return errNoExchange }

// openLock opens the lock file; without flock (Linux only here), two runs
// with the same --out are not kept apart on this system.
func openLock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}
