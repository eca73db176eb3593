//go:build !linux

package reports

import "errors"

// renameNoReplace has no portable form: the caller checks out with Lstat
// and renames.
func renameNoReplace(from, to string) error { return errors.ErrUnsupported }
