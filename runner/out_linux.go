package runner

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// errNoExchange: the file system cannot exchange two names in one step.
var errNoExchange = errors.New("the file system cannot exchange two paths atomically")

// exchange swaps the paths a and b in one step (renameat2 with
// RENAME_EXCHANGE): at every moment each name holds one complete tree.
// A variable, so that a test can take the way of a file system without it.
var exchange = func(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%w: %v", errNoExchange, err)
	}
	return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
}
