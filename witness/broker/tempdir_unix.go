//go:build unix

package broker

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openNonblock keeps an open from blocking on a FIFO swapped in after
// the Lstat that said "regular file"; a regular file ignores it.
const openNonblock = syscall.O_NONBLOCK

// processAlive says whether a process pid exists (signal 0 checks
// without sending). Unsure means alive: its directory is left alone.
func processAlive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return !errors.Is(err, syscall.ESRCH)
}

// ownedByUs says whether a directory in the shared temporary directory
// is this user's: another user's is never removed.
func ownedByUs(st fs.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(s.Uid) == os.Getuid()
}
