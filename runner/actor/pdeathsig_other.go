//go:build !linux

package actor

import "os/exec"

// dieWithParent does nothing where the kernel cannot tie a child's life to
// its parent's: an orphaned actor lives until its own context ends.
func dieWithParent(cmd *exec.Cmd) {}
