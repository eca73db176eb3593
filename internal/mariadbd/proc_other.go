//go:build !linux

package mariadbd

import "syscall"

// sysProcAttr puts the server in a process group of its own. Without a
// parent-death signal (Linux only), a server whose run was killed outright
// keeps running until the next Start in the same place sweeps it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
