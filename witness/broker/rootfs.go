package broker

import (
	"fmt"
	"io/fs"
	"os"
)

// rootFS is the fs.FS of ReadDataDir: files beneath an os.Root, refusing
// symbolic links, devices, FIFOs and sockets (Lstat before the open, a
// non-blocking open, and the same file after it).
type rootFS struct{ r *os.Root }

func (f rootFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	before, err := f.r.Lstat(name)
	if err != nil {
		return nil, err
	}
	if t := before.Mode().Type(); t != 0 && t != fs.ModeDir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("not a regular file or directory (%v)", t)}
	}
	file, err := f.r.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	after, err := file.Stat()
	if err != nil || !os.SameFile(before, after) || before.Mode().Type() != after.Mode().Type() {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("replaced while opened: %v", err)}
	}
	return file, nil
}
