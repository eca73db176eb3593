package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Marker is the first line of every report Render writes: an HTML comment,
// which GitHub and pandoc do not show. report -o replaces an existing file
// only when it begins with this line, as run --out replaces only an
// evidence file of this tool.
const Marker = "<!-- orderflow-audit report -->"

// visible escapes, line by line, every character of a rendered report that
// a terminal (cat report.md) or a viewer would act on instead of showing:
// control characters but the line feed, C1, bidi overrides and isolates,
// other invisible format characters (checks.Printable). The report's own
// text has none, so only what a bundle put into it changes; the escape
// (\x1b, \u202e) starts with a backslash followed by a letter, which
// Markdown shows as it is.
func visible(md []byte) []byte {
	lines := bytes.Split(md, []byte("\n"))
	changed := false
	for i, l := range lines {
		if s := checks.Printable(string(l)); s != string(l) {
			lines[i], changed = []byte(s), true
		}
	}
	if !changed {
		return md
	}
	return bytes.Join(lines, []byte("\n"))
}

// CheckOutput refuses a report path (report -o) that must not be written,
// with an error wrapping evidence.ErrBadOutput that names out and why: the
// evidence file being reported on (evidencePath) or anything of its
// bundle (the directory named after the evidence file, the directories
// and files its event logs and witnesses are listed under, a hard link to
// one of those); a symbolic link, a directory, a device, a FIFO or a
// socket; an existing file that is not a report of this tool (it does not
// begin with Marker); a place that cannot be written. ev is the evidence
// read from evidencePath, or nil before it has been read (then the bundle
// is the evidence file and the directory named after it).
func CheckOutput(out, evidencePath string, ev *evidence.Evidence) error {
	if out == "" {
		return evidence.BadOutputf("-o: empty path")
	}
	st, err := os.Lstat(out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return evidence.BadOutputf("-o %s: %v", out, unwrapPath(err))
	}
	exists := err == nil
	dir := filepath.Dir(out)
	realDir, err := realPath(dir)
	if err != nil {
		return evidence.BadOutputf("-o %s: directory %s: %v", out, dir, unwrapPath(err))
	}
	target := filepath.Join(realDir, filepath.Base(out))
	if err := outsideBundle(out, target, st, evidencePath, ev); err != nil {
		return err
	}
	if exists {
		if err := replaceable(out, st); err != nil {
			return err
		}
	}
	if err := evidence.CheckWritableDir(dir); err != nil {
		return evidence.BadOutputf("-o %s: %v", out, err)
	}
	return nil
}

// outsideBundle refuses target (out with its directory resolved; st its
// Lstat, nil when it does not exist) when it is the evidence file or lies
// in its bundle.
func outsideBundle(out, target string, st fs.FileInfo, evidencePath string, ev *evidence.Evidence) error {
	evReal, err := realPath(evidencePath)
	if err != nil {
		evReal, _ = filepath.Abs(evidencePath) // verify says what is wrong with it
	}
	if target == evReal || sameFile(st, evidencePath) {
		return evidence.BadOutputf("-o %s is the evidence file being reported on: refusing to overwrite its own input", out)
	}
	if ours, _ := evidence.IsEvidenceFile(out); ours {
		return evidence.BadOutputf("-o %s is an evidence file: refusing to overwrite it with a report", out)
	}
	evDir := filepath.Dir(evReal)
	base := filepath.Base(evReal)
	dirs := []string{strings.TrimSuffix(base, filepath.Ext(base))} // run writes the logs there
	var files []string
	if ev != nil {
		var listed []string
		for _, sc := range ev.Scenarios {
			for _, l := range sc.Logs {
				listed = append(listed, l.Path)
			}
		}
		if w := ev.Witness; w != nil {
			if w.Database != nil {
				for _, f := range w.Database.Files {
					listed = append(listed, f.Path)
				}
			}
			if w.Broker != nil {
				for _, f := range w.Broker.Files {
					listed = append(listed, f.Path)
				}
			}
		}
		for _, p := range listed {
			p = path.Clean(p)
			files = append(files, p)
			if top, _, ok := strings.Cut(p, "/"); ok {
				dirs = append(dirs, top)
			}
		}
	}
	for _, d := range dirs {
		if d == "" || d == "." || d == ".." {
			continue
		}
		root := filepath.Join(evDir, filepath.FromSlash(d))
		if r, err := filepath.EvalSymlinks(root); err == nil {
			root = r
		}
		if rel, err := filepath.Rel(root, target); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return evidence.BadOutputf("-o %s is inside the evidence bundle (%s holds its logs and witnesses): refusing to write a report there", out, root)
		}
	}
	for _, f := range files {
		p := filepath.Join(evDir, filepath.FromSlash(f))
		if p == target {
			return evidence.BadOutputf("-o %s is inside the evidence bundle (it is listed as %s): refusing to overwrite it", out, f)
		}
		if sameFile(st, p) {
			return evidence.BadOutputf("-o %s is one of the evidence bundle's files (a hard link to %s): refusing to overwrite it", out, f)
		}
	}
	return nil
}

// realPath is p absolute, with every symbolic link resolved, so that
// paths given relative and absolute compare equal.
func realPath(p string) (string, error) {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	return filepath.Abs(r)
}

// sameFile tells whether st (an Lstat, nil for a missing file) is the
// file at p.
func sameFile(st fs.FileInfo, p string) bool {
	if st == nil || !st.Mode().IsRegular() {
		return false
	}
	pst, err := os.Lstat(p)
	return err == nil && os.SameFile(st, pst)
}

// replaceable refuses an existing out (st its Lstat) that a report must
// not replace: anything but a regular file, or a file that is not a
// report of this tool.
func replaceable(out string, st fs.FileInfo) error {
	switch mode := st.Mode(); {
	case mode&fs.ModeSymlink != 0:
		return evidence.BadOutputf("-o %s is a symbolic link: refusing to write through it (name the file itself)", out)
	case mode.IsDir():
		return evidence.BadOutputf("-o %s is a directory: name a file", out)
	case !mode.IsRegular():
		return evidence.BadOutputf("-o %s is not a regular file (%s): refusing to replace it", out, fileType(mode))
	}
	ours, err := isReport(out, st)
	if err != nil {
		return evidence.BadOutputf("-o %s: %v", out, err)
	}
	if !ours {
		return evidence.BadOutputf("-o %s exists and is not a report of orderflow-audit (its first line is not %s): refusing to overwrite it", out, Marker)
	}
	return nil
}

// legacyTitle is how a report began before it carried Marker: its title
// line. Such a report (reports/u80.md of an older checkout) is ours too.
var legacyTitle = regexp.MustCompile(`^# (PASS|FAIL|INCONCLUSIVE)( \(unwitnessed\))?: orderflow-audit run [^\n]*\n\n\*\*Why:\*\* `)

// isReport tells whether the regular file at p (st its Lstat) begins
// with Marker, or with the title and "Why" line of a report rendered
// before the marker. It opens without following a link or blocking on a
// FIFO swapped in since, and reads 512 bytes at most.
func isReport(p string, st fs.FileInfo) (bool, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false, unwrapPath(err)
	}
	defer f.Close()
	if got, err := f.Stat(); err != nil || !os.SameFile(st, got) {
		return false, errors.New("the file changed while it was being checked")
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	head = head[:n]
	return bytes.HasPrefix(head, []byte(Marker+"\n")) || legacyTitle.Match(head), nil
}

func fileType(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeDevice != 0:
		return "a device"
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	}
	return mode.Type().String()
}

// unwrapPath drops a *fs.PathError's operation and path: the messages
// above name the path already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteFile writes a rendered report to out once CheckOutput accepts it:
// into a temporary file beside out, synced, then renamed onto out. A new
// out is created without replacing anything that appeared meanwhile
// (renameat2 RENAME_NOREPLACE where the system has it); an existing one is
// checked again just before the rename, so that a file swapped in since
// CheckOutput is not replaced unless it is a report. Errors wrap
// evidence.ErrBadOutput and name out; nothing is left behind.
func WriteFile(out, evidencePath string, ev *evidence.Evidence, md []byte) error {
	if err := CheckOutput(out, evidencePath, ev); err != nil {
		return err
	}
	dir := filepath.Dir(out)
	f, err := os.CreateTemp(dir, "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return evidence.BadOutputf("write %s: %v", out, unwrapPath(err))
	}
	tmp := f.Name()
	_, err = f.Write(md)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = place(tmp, out)
	}
	if err != nil {
		os.Remove(tmp)
		if errors.Is(err, evidence.ErrBadOutput) {
			return err // replaceable's refusal names out already
		}
		return evidence.BadOutputf("write %s: %v", out, unwrapPath(err))
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename itself survives a crash
		d.Close()
	}
	return nil
}

// place renames tmp onto out: without replacing when out does not exist,
// else only after out is found, once more, to be a report of this tool.
func place(tmp, out string) error {
	err := renameNoReplace(tmp, out)
	if err == nil || (!errors.Is(err, fs.ErrExist) && !errors.Is(err, errors.ErrUnsupported)) {
		return err
	}
	st, err := os.Lstat(out)
	switch {
	case err == nil:
		if err := replaceable(out, st); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("rename: %w", unwrapPath(err))
	}
	return nil
}
