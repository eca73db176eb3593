//go:build unix

package bundle

import (
	"errors"
	"io/fs"
	"strconv"
	"syscall"
)

// Open flags: never block (a FIFO or a device swapped in after the Lstat
// must not hang the open; fstat then refuses it), never follow the last
// component, never leak the descriptor to a child process.
const (
	oNonblock = syscall.O_NONBLOCK
	oNofollow = syscall.O_NOFOLLOW
	oCloexec  = syscall.O_CLOEXEC
)

// nlink is a file's number of hard links (1 where the system does not say).
func nlink(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

func isLoop(err error) bool   { return errors.Is(err, syscall.ELOOP) }
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// fileID is a file's device and inode (its path where the system does not
// say: the gate follows no link, so a path names one file).
func fileID(fi fs.FileInfo, rel string) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(st.Ino, 10)
	}
	return rel
}
