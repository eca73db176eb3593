// Package bundle is the one gate through which the verifier reads an
// evidence bundle: the evidence file and everything beneath its directory
// (event logs, witness files). A bundle comes from whoever ran it
// (DESIGN.md, principle 7), so the gate reads only beneath the bundle's
// root, only regular files with one hard link, never through a symlink,
// never blocking on a FIFO or a device, within stated limits of bytes, and
// holds a witness file's size and sha256 to the evidence before any parser
// sees a byte of it.
//
// What the gate follows and what it does not: the evidence path the user
// typed is followed as the operating system resolves it (symlinks in it
// included: the user chose that name), and the bundle's root is the
// directory of that path as typed, not of a symlink's target. Nothing
// inside the bundle is followed: a symlink anywhere in a path beneath the
// root (relative or absolute, pointing inside the bundle or out of it) is
// refused, and so is every file that is not regular (directory, FIFO,
// device, socket) or that has more than one hard link (so that one file
// cannot be read under many names).
//
// Every file is opened through an os.Root of the bundle's directory, one
// directory at a time: each component of its relative path is Lstat'ed in
// its parent's descriptor (a directory must be a real directory, and is
// then opened and compared with its Lstat; the last component must be a
// regular file), the file is opened with O_NOFOLLOW|O_NONBLOCK, and fstat
// must show the same device and inode, still regular, with one link and
// within the size limit of its kind. A file or directory swapped between
// the check and the open is refused, not read.
package bundle

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Limits on what one bundle may make the verifier read. They are set well
// above what a real run writes: the default run's bundle
// (evidence/example) has a 127 KB evidence file, event logs of at most
// 14 KB and witness files of at most 461 KB (the binlog; the rest are
// under 8 KB); the 1,000,000-event bundle of BenchmarkVerify1M has 296 MB
// of logs, the largest about 120 MB, which verify reads in ~3 s and 390 MB.
// Reading stops at these limits with an error naming the file, so that
// verify's time and memory grow with the bundle's real size and stay
// within about 1 GB and a minute.
const (
	// MaxEvidenceBytes bounds the evidence file (as evidence.ReadFile).
	MaxEvidenceBytes = evidence.MaxFileBytes
	// MaxLogBytes bounds one event log. Logs are streamed (the reader
	// holds one line of at most evidence.MaxLineBytes at a time), so this
	// bounds time, not memory.
	MaxLogBytes = 512 << 20
	// MaxWitnessFileBytes bounds one witness file (a binlog file, a file
	// of the broker's directory, a dump). The binlog reader holds what it
	// reads (about twice the file's bytes), hence a lower limit than a
	// log's.
	MaxWitnessFileBytes = 128 << 20
	// MaxWitnessBytes bounds the witness files of a bundle together.
	MaxWitnessBytes = 256 << 20
	// MaxTotalBytes bounds every byte read through one Bundle: the
	// evidence file, logs and witness files, a log read twice counting
	// twice (a verified witness file is read once and kept).
	MaxTotalBytes = 768 << 20
	// MaxFiles bounds the files one Bundle opens and the entries a
	// listing walks (the default run's bundle has 154 files).
	MaxFiles = 20000
	// MaxDirs bounds the directories a Bundle keeps open for the files
	// beneath them (the default run's bundle has 45); past it, each is
	// opened again for each file.
	MaxDirs = 4096
	// MaxDepth bounds the components of a path inside the bundle (the
	// deepest a run writes has 6: u80/witness/kafka/partitions/<p>/0.dat).
	MaxDepth = 32
	// MaxHeldBytes bounds the bytes of verified files kept in memory; a
	// verified file beyond it, or larger than MaxHeldFileBytes, is kept as
	// an open file instead and read again from disk (see Verified).
	MaxHeldBytes = 64 << 20
	// MaxHeldFileBytes is the largest verified file kept in memory.
	MaxHeldFileBytes = 4 << 20
)

// Kind says which limit applies to a file.
type Kind int

// Kinds of files in a bundle.
const (
	// KindLog is an event log: at most MaxLogBytes.
	KindLog Kind = iota
	// KindWitness is a witness file: at most MaxWitnessFileBytes, and
	// counted against MaxWitnessBytes.
	KindWitness
)

func (k Kind) limit() int64 {
	if k == KindWitness {
		return MaxWitnessFileBytes
	}
	return MaxLogBytes
}

// The gate's refusals, one per class. Every error of this package is an
// *Error that names the file and wraps one of these (and, where the system
// gave one, the system's error).
var (
	// ErrMissing: the file (or a directory on its path) does not exist.
	ErrMissing = errors.New("no such file or directory")
	// ErrEscapes: the path is not a plain relative path beneath the
	// bundle's root: empty, absolute, with "..", "." or an empty
	// component, a backslash or a NUL byte, or too deep.
	ErrEscapes = errors.New("not a path inside the bundle")
	// ErrLink: the file, or a directory on its path, is a symlink.
	ErrLink = errors.New("is a symbolic link, which the verifier does not follow inside a bundle")
	// ErrNotRegular: a directory, FIFO, device or socket where a regular
	// file is expected (or a file where a directory is).
	ErrNotRegular = errors.New("not a regular file")
	// ErrNotDirectory: a file where a directory is expected.
	ErrNotDirectory = errors.New("not a directory")
	// ErrHardLink: the file has more than one hard link.
	ErrHardLink = errors.New("has more than one hard link")
	// ErrTooLarge: the file is larger than the limit of its kind, or a
	// directory holds more entries than MaxFiles.
	ErrTooLarge = errors.New("larger than the verifier reads")
	// ErrBudget: reading the file would exceed what one bundle may make
	// the verifier read (MaxTotalBytes, MaxWitnessBytes, MaxFiles).
	ErrBudget = errors.New("the bundle's files together exceed what the verifier reads")
	// ErrSize: the file's size differs from the one the evidence records.
	ErrSize = errors.New("size differs from the evidence")
	// ErrDigest: the file's sha256 differs from the one the evidence
	// records.
	ErrDigest = errors.New("sha256 differs from the evidence")
	// ErrChanged: the file changed between its check and its open, or
	// while it was read.
	ErrChanged = errors.New("changed while the verifier opened it")
	// ErrClosed: the Bundle was closed.
	ErrClosed = errors.New("bundle closed")
)

// Error is a refusal of one file of a bundle.
type Error struct {
	Op   string // what the gate was doing: "open", "verify", "list", "read"
	Path string // the path, relative to the bundle's root (or as typed, for the evidence file)
	Err  error  // one of the sentinel errors
	// Detail says more: the file's type, its size and the limit, what
	// the file holds where the evidence disagrees.
	Detail string
	// Got is what the file holds where it disagrees with the evidence
	// (ErrSize: its size in bytes; ErrDigest: its sha256).
	Got string
	// cause is the system's error, if any (errors.Is(err, fs.ErrNotExist)
	// holds for a missing file).
	cause error
}

func (e *Error) Error() string {
	msg := e.Op + " " + e.Path + ": " + e.Err.Error()
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Err, e.cause}
	}
	return []error{e.Err}
}

// Bundle is an open bundle: the evidence file's bytes and its directory,
// opened as an os.Root. It is safe for concurrent use. Close releases it.
type Bundle struct {
	path     string
	root     *os.Root
	evidence []byte

	verifying sync.Mutex // held through a Verified

	mu       sync.Mutex // guards what follows
	closed   bool
	total    int64 // bytes charged against MaxTotalBytes
	witness  int64 // against MaxWitnessBytes
	held     int64 // bytes of verified files kept in memory
	files    int   // files opened, against MaxFiles
	verified map[string]*File
	open     map[*File]struct{}  // files whose descriptor is open
	dirs     map[string]*os.Root // directories opened (dir), by path
}

// Open opens the bundle of the evidence file at evidencePath: it reads the
// evidence file (following the name as typed, see the package comment)
// opened O_NONBLOCK and checked with fstat to be a regular file with one
// hard link and at most MaxEvidenceBytes, and opens the file's directory
// as the bundle's root. The error is an *Error naming evidencePath.
func Open(evidencePath string) (*Bundle, error) {
	data, err := readEvidence(evidencePath)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(filepath.Dir(evidencePath))
	if err != nil {
		return nil, &Error{Op: "open the directory of", Path: evidencePath, Err: ErrMissing, Detail: err.Error(), cause: err}
	}
	return &Bundle{path: evidencePath, root: root, evidence: data, total: int64(len(data)), files: 1,
		verified: map[string]*File{}, open: map[*File]struct{}{}, dirs: map[string]*os.Root{}}, nil
}

// readEvidence reads the evidence file through the gate's rules, following
// the one name the user gave.
func readEvidence(path string) ([]byte, error) {
	fail := func(err error, detail string, cause error) error {
		return &Error{Op: "read evidence file", Path: path, Err: err, Detail: detail, cause: cause}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock|oCloexec, 0)
	if err != nil {
		return nil, fail(classify(err), "", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fail(ErrNotRegular, err.Error(), err)
	}
	if err := checkRegular(st, MaxEvidenceBytes); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, fail(e.Err, e.Detail, nil)
		}
		return nil, fail(err, "", nil)
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fail(ErrChanged, "shorter than its size: "+err.Error(), err)
	}
	return data, nil
}

// Path returns the evidence file's path as given to Open.
func (b *Bundle) Path() string { return b.path }

// Evidence returns the evidence file's bytes, as read by Open.
func (b *Bundle) Evidence() []byte { return b.evidence }

// Close closes every file the bundle still holds open and its root.
func (b *Bundle) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	for f := range b.open {
		f.f.Close()
	}
	for _, d := range b.dirs {
		d.Close()
	}
	b.open, b.dirs = nil, nil
	b.verified = nil
	return b.root.Close()
}

// charge counts n bytes of a file of kind against the bundle's budgets.
func (b *Bundle) charge(rel string, kind Kind, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return &Error{Op: "open", Path: rel, Err: ErrClosed}
	case b.files+1 > MaxFiles:
		return &Error{Op: "open", Path: rel, Err: ErrBudget, Detail: fmt.Sprintf("more than %d files opened", MaxFiles)}
	case b.total+n > MaxTotalBytes:
		return &Error{Op: "open", Path: rel, Err: ErrBudget,
			Detail: fmt.Sprintf("%d bytes read before it, %d in it; the limit is %d MiB", b.total, n, MaxTotalBytes>>20)}
	case kind == KindWitness && b.witness+n > MaxWitnessBytes:
		return &Error{Op: "open", Path: rel, Err: ErrBudget,
			Detail: fmt.Sprintf("%d bytes of witness files before it, %d in it; the limit for witness files is %d MiB", b.witness, n, MaxWitnessBytes>>20)}
	}
	b.files++
	b.total += n
	if kind == KindWitness {
		b.witness += n
	}
	return nil
}

// checkRel refuses a path that is not a plain relative path beneath the
// root, and returns its components.
func checkRel(op, rel string) ([]string, error) {
	bad := func(why string) ([]string, error) {
		return nil, &Error{Op: op, Path: rel, Err: ErrEscapes, Detail: why}
	}
	switch {
	case rel == "":
		return bad("empty path")
	case strings.IndexByte(rel, 0) >= 0:
		return bad("NUL byte in path")
	case strings.Contains(rel, `\`):
		return bad("backslash in path")
	case strings.HasPrefix(rel, "/") || filepath.IsAbs(rel) || filepath.VolumeName(rel) != "":
		return bad("absolute path: paths are relative to the evidence file")
	}
	parts := strings.Split(rel, "/")
	if len(parts) > MaxDepth {
		return bad(fmt.Sprintf("more than %d components", MaxDepth))
	}
	for _, p := range parts {
		switch p {
		case "":
			return bad("empty component")
		case ".":
			return bad(`"." component`)
		case "..":
			return bad(`".." component: paths stay inside the evidence file's directory`)
		}
	}
	return parts, nil
}

// dir returns the directory whose components are parts (of rel, which
// checkRel accepted), opened one component at a time: each one Lstat'ed
// in its parent's descriptor and refused unless a real directory, then
// opened and compared (device and inode) with that Lstat. A path is thus
// never resolved through a symlink, even one swapped in while it is
// walked, and what follows is opened through the directory's own
// descriptor. Directories opened once are kept (up to MaxDirs) for the
// next file beneath them; release closes one that was not kept.
func (b *Bundle) dir(op, rel string, parts []string) (r *os.Root, release func(), err error) {
	r, release = b.root, func() {}
	for i, p := range parts {
		key := strings.Join(parts[:i+1], "/")
		b.mu.Lock()
		sub, ok := b.dirs[key]
		closed := b.closed
		b.mu.Unlock()
		if closed {
			release()
			return nil, nil, &Error{Op: op, Path: rel, Err: ErrClosed}
		}
		if ok {
			release()
			r, release = sub, func() {}
			continue
		}
		sub, err := openSubdir(r, p)
		release()
		if err != nil {
			e := named(err, op, rel)
			if e, ok := e.(*Error); ok && key != rel {
				e.Detail = strings.TrimPrefix(e.Detail+"; ", "; ") + "at " + key + " on its path"
			}
			return nil, nil, e
		}
		b.mu.Lock()
		switch old, ok := b.dirs[key]; {
		case ok: // opened meanwhile by another goroutine
			sub.Close()
			r, release = old, func() {}
		case !b.closed && len(b.dirs) < MaxDirs:
			b.dirs[key] = sub
			r, release = sub, func() {}
		default:
			r, release = sub, func() { sub.Close() }
		}
		b.mu.Unlock()
	}
	return r, release, nil
}

// openSubdir opens the directory name inside parent, refusing a symlink or
// anything but a directory, and a directory swapped after its Lstat.
func openSubdir(parent *os.Root, name string) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if err != nil {
		return nil, &Error{Err: classify(err), cause: err}
	}
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return nil, &Error{Err: ErrLink}
	case !m.IsDir():
		return nil, &Error{Err: ErrNotDirectory, Detail: "it is a " + evidence.FileTypeName(m)}
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, &Error{Err: classify(err), Detail: err.Error(), cause: err}
	}
	if st, err := sub.Stat("."); err != nil || !os.SameFile(fi, st) {
		sub.Close()
		return nil, &Error{Err: ErrChanged, Detail: "another directory is now at its path"}
	}
	return sub, nil
}

func missingDetail(p, rel string) string {
	if p == rel {
		return ""
	}
	return "at " + p
}

// classify maps a system error of an open or a stat to a sentinel.
func classify(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ErrMissing
	case isLoop(err):
		return ErrLink
	case isNotDir(err):
		return ErrNotDirectory
	case errors.Is(err, os.ErrClosed):
		return ErrClosed
	}
	return ErrNotRegular
}

// checkRegular holds a file's stat to the gate's rules: a regular file,
// one hard link, at most limit bytes.
func checkRegular(fi fs.FileInfo, limit int64) error {
	m := fi.Mode()
	switch {
	case m&fs.ModeSymlink != 0:
		return &Error{Err: ErrLink}
	case !m.IsRegular():
		return &Error{Err: ErrNotRegular, Detail: "it is a " + evidence.FileTypeName(m)}
	}
	if n := nlink(fi); n != 1 {
		return &Error{Err: ErrHardLink, Detail: fmt.Sprintf("%d links: one file must not be read under several names", n)}
	}
	if fi.Size() > limit {
		return &Error{Err: ErrTooLarge, Detail: fmt.Sprintf("it has %d bytes, the limit is %d MiB", fi.Size(), limit>>20)}
	}
	return nil
}

// openRegular opens rel for reading under the gate's rules and returns the
// open file and its stat. The caller charges it and closes it.
func (b *Bundle) openRegular(op, rel string, limit int64) (*os.File, fs.FileInfo, error) {
	parts, err := checkRel(op, rel)
	if err != nil {
		return nil, nil, err
	}
	d, release, err := b.dir(op, rel, parts[:len(parts)-1])
	if err != nil {
		return nil, nil, err
	}
	defer release()
	name := parts[len(parts)-1]
	fi, err := d.Lstat(name)
	if err != nil {
		return nil, nil, &Error{Op: op, Path: rel, Err: classify(err), cause: err}
	}
	if err := checkRegular(fi, limit); err != nil {
		return nil, nil, named(err, op, rel)
	}
	// os.Root follows a symlink even with O_NOFOLLOW (within the root): a
	// link swapped in after the Lstat is caught by the comparison below.
	f, err := d.OpenFile(name, os.O_RDONLY|oNonblock|oNofollow|oCloexec, 0)
	if err != nil {
		return nil, nil, &Error{Op: op, Path: rel, Err: classify(err), Detail: err.Error(), cause: err}
	}
	st, err := f.Stat()
	if err == nil {
		err = checkRegular(st, limit)
		if err == nil && !os.SameFile(fi, st) {
			err = &Error{Err: ErrChanged, Detail: "another file is now at its path"}
		}
	}
	if err != nil {
		f.Close()
		return nil, nil, named(err, op, rel)
	}
	return f, st, nil
}

// named fills in an *Error's operation and path.
func named(err error, op, rel string) error {
	var e *Error
	if errors.As(err, &e) {
		e.Op, e.Path = op, rel
		return e
	}
	return &Error{Op: op, Path: rel, Err: ErrNotRegular, Detail: err.Error(), cause: err}
}
