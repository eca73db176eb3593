package reports

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames from onto to unless to exists (fs.ErrExist).
// A file system without RENAME_NOREPLACE gives errors.ErrUnsupported.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		return errors.ErrUnsupported
	}
	return err
}
