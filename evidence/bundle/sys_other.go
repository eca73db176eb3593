//go:build !unix

package bundle

import "io/fs"

// Elsewhere than on Unix the gate still opens through an os.Root, checks
// every component with Lstat and compares the file it opened with it; it
// cannot ask for a non-blocking open nor count hard links.
const (
	oNonblock = 0
	oNofollow = 0
	oCloexec  = 0
)

func nlink(fs.FileInfo) uint64 { return 1 }

func isLoop(error) bool   { return false }
func isNotDir(error) bool { return false }

func fileID(_ fs.FileInfo, rel string) string { return rel }
