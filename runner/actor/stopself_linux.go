package actor

import (
	"os"
	"runtime"
	"syscall"
)

// stopThisThread stops the process with a SIGSTOP aimed at the calling
// thread. A SIGSTOP sent to the process (kill) is taken by its main
// thread, which may be asleep: the calling thread would go on meanwhile
// and, say, send the COMMIT it was stopped before. Aimed at the thread
// (tgkill), the signal is taken by the caller on its way back from the
// system call, and the group stop begins there.
func stopThisThread() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}
