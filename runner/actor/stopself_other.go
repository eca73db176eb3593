//go:build !linux

package actor

import (
	"os"
	"syscall"
)

// stopThisThread stops the process (SIGSTOP to itself). Without tgkill the
// calling thread may run on a little before the process stops.
func stopThisThread() error {
	return syscall.Kill(os.Getpid(), syscall.SIGSTOP)
}
