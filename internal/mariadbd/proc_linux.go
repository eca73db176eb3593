package mariadbd

import "syscall"

// sysProcAttr puts the server in a process group of its own (a Ctrl-C at
// the terminal is the run's to handle) and has the kernel kill it when the
// thread that started it ends (see run: that thread lives as long as the
// server), so that a run killed outright does not leave its server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
