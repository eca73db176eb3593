package broker

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tempPrefix names the private copies ReadDataFS makes:
// ofa-kfake-read-<pid>-<random> in os.TempDir(). The pid lets a later
// reader remove the copy of a process that was killed before it could.
const tempPrefix = "ofa-kfake-read-"

// makeTempDir removes stale copies, then creates a fresh directory, mode
// 0700, for this process's copy.
func makeTempDir() (string, error) {
	removeStaleTempDirs(os.TempDir())
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", tempPrefix, os.Getpid()))
}

// removeStaleTempDirs removes the copies in tmp whose process is gone. A
// copy of this process (a concurrent read), of a live process, another
// user's, or anything but a directory is left alone. Failures are
// ignored: the cleanup is a courtesy, the read does not depend on it.
func removeStaleTempDirs(tmp string) {
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), tempPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		digits, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(digits)
		if !ok || err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		p := filepath.Join(tmp, e.Name())
		if st, err := os.Lstat(p); err == nil && st.IsDir() && ownedByUs(st) {
			_ = os.RemoveAll(p)
		}
	}
}

// write creates the plan's copy in dir, a directory this process just
// created: every directory with Mkdir and every file with O_EXCL, so no
// link or other file can be in the way of a write.
func (p *dataPlan) write(dir string) error {
	for _, d := range p.dirs {
		if err := os.Mkdir(filepath.Join(dir, filepath.FromSlash(d)), 0o700); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
	}
	for _, f := range p.files {
		if err := writeExcl(filepath.Join(dir, filepath.FromSlash(f.name)), f.data); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
	}
	return nil
}

func writeExcl(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

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
