//go:build unix && !linux

package audit

import "syscall"

// procAttr puts a role's process in a process group of its own (no
// Pdeathsig outside Linux: a killed audit leaves its roles running).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }

// alive reports whether a process pid exists.
func alive(pid int) bool { return syscall.Kill(pid, 0) != syscall.ESRCH }
