package actor

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel SIGKILL the child when this process dies,
// even by SIGKILL: an orphaned actor would go on writing into the staging
// directory and holding database connections. (The signal follows the
// death of the thread that started the child; Go does not end its threads
// while the process lives, except those of goroutines that exit locked to
// them, which Start never runs on.)
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
