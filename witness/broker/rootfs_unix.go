//go:build unix

package broker

import "syscall"

// openNonblock keeps an open from blocking on a FIFO swapped in after
// the Lstat that said "regular file"; a regular file ignores it.
const openNonblock = syscall.O_NONBLOCK
