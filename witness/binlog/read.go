package binlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"github.com/go-mysql-org/go-mysql/replication"
)

// fileNameRE matches a binlog file name: base name, dot, at least six
// digits (MariaDB pads to six and grows past 999999).
var fileNameRE = regexp.MustCompile(`^(.+)\.([0-9]{6,})$`)

// Files lists the binlog files in dir (names "<base>.NNNNNN", any base),
// sorted by number. The index file and anything else are left out. More than
// one base name in dir is an error: the reader needs one sequence.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list binlog files in %s: %w", dir, err)
	}
	type numbered struct {
		path string
		n    uint64
	}
	var (
		out  []numbered
		base string
	)
	for _, e := range entries {
		m := fileNameRE.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		if base != "" && m[1] != base {
			return nil, fmt.Errorf("list binlog files in %s: two sequences, %s and %s", dir, base, m[1])
		}
		base = m[1]
		n, _ := strconv.ParseUint(m[2], 10, 64)
		out = append(out, numbered{filepath.Join(dir, e.Name()), n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n < out[j].n })
	paths := make([]string, len(out))
	for i, f := range out {
		paths[i] = f.path
	}
	return paths, nil
}

// Scan reads the binlog files at paths, which must be one contiguous
// sequence in order, and calls fn with each committed transaction in log
// order. It returns what it learned about each file it finished. A non-nil
// error from fn stops the scan and is returned as is; a problem with the
// files is returned as a *FileError wrapping one of the sentinel errors,
// after every transaction before the problem has been passed to fn.
func Scan(paths []string, fn func(Transaction) error) ([]FileInfo, error) {
	if len(paths) == 0 {
		return nil, errors.New("read binlog: no files")
	}
	s := newScanner(fn)
	var infos []FileInfo
	for i, path := range paths {
		s.crashable = i < len(paths)-1
		info, err := s.file(path)
		if err != nil {
			return infos, err
		}
		if i > 0 {
			if err := checkFollows(infos[i-1], info); err != nil {
				return infos, &FileError{File: info.Name, Pos: 0, Err: err}
			}
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// Transactions streams the transactions of Scan. A file problem is yielded
// as the last pair, with a zero Transaction.
func Transactions(paths []string) iter.Seq2[Transaction, error] {
	return func(yield func(Transaction, error) bool) {
		stopped := errors.New("stopped")
		_, err := Scan(paths, func(t Transaction) error {
			if !yield(t, nil) {
				return stopped
			}
			return nil
		})
		if err != nil && !errors.Is(err, stopped) {
			yield(Transaction{}, err)
		}
	}
}

// History is a whole binlog read into memory: small enough for one run.
type History struct {
	Files        []FileInfo    `json:"files"`
	Transactions []Transaction `json:"transactions"`
}

// ReadAll reads every transaction of paths. On error it returns what it
// read before the problem with the error, so that a verifier can say how
// far the witness goes.
func ReadAll(paths []string) (History, error) {
	var h History
	files, err := Scan(paths, func(t Transaction) error {
		h.Transactions = append(h.Transactions, t)
		return nil
	})
	h.Files = files
	return h, err
}

// checkFollows checks that next is the file prev handed over to: the
// ROTATE of prev names it, or (after a STOP, i.e. a server restart) it has
// the next number of the same base name.
func checkFollows(prev, next FileInfo) error {
	switch prev.Closed {
	case "rotate":
		if prev.Next != next.Name {
			return fmt.Errorf("%w: %s rotates to %s, not %s", ErrNotContiguous, prev.Name, prev.Next, next.Name)
		}
	case "stop", "crash":
		pm, nm := fileNameRE.FindStringSubmatch(prev.Name), fileNameRE.FindStringSubmatch(next.Name)
		if pm == nil || nm == nil || pm[1] != nm[1] {
			return fmt.Errorf("%w: %s does not follow %s", ErrNotContiguous, next.Name, prev.Name)
		}
		pn, _ := strconv.ParseUint(pm[2], 10, 64)
		nn, _ := strconv.ParseUint(nm[2], 10, 64)
		if nn != pn+1 {
			return fmt.Errorf("%w: %s does not follow %s", ErrNotContiguous, next.Name, prev.Name)
		}
	}
	return nil
}

// maxEvent bounds one event's size (MariaDB's max_allowed_packet ceiling)
// so that a corrupt length cannot make the reader allocate gigabytes.
const maxEvent = 1 << 30

// file reads one binlog file event by event. It frames events itself
// (rather than BinlogParser.ParseFile) because the library treats a file
// that ends inside an event header as a clean end, and skips rows events
// whose table map is missing: both would shorten the history silently.
func (s *scanner) file(path string) (FileInfo, error) {
	name := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return FileInfo{}, &FileError{File: name, Err: fmt.Errorf("open: %w", err)}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return FileInfo{}, &FileError{File: name, Err: fmt.Errorf("stat: %w", err)}
	}
	r := bufio.NewReaderSize(f, 256<<10)
	magic := make([]byte, len(replication.BinLogFileHeader))
	if _, err := io.ReadFull(r, magic); err != nil || !bytes.Equal(magic, replication.BinLogFileHeader) {
		if st.Size() < int64(len(magic)) && bytes.HasPrefix(replication.BinLogFileHeader, magic[:st.Size()]) {
			return FileInfo{}, &FileError{File: name, Err: ErrTruncated}
		}
		return FileInfo{}, &FileError{File: name, Err: ErrNotBinlog}
	}
	s.startFile(name, st.Size())
	off := int64(len(magic))
	header := make([]byte, replication.EventHeaderSize)
	for {
		n, err := io.ReadFull(r, header)
		if err == io.EOF {
			break
		}
		if err != nil && s.crashed(off) {
			break
		}
		if err != nil {
			return FileInfo{}, s.fail(off, fmt.Errorf("%w: %d of %d header bytes", ErrTruncated, n, len(header)))
		}
		size := int64(binary.LittleEndian.Uint32(header[9:13]))
		if size < int64(len(header)) || size > maxEvent {
			return FileInfo{}, s.fail(off, fmt.Errorf("%w: event size %d", ErrCorrupt, size))
		}
		if off+size > st.Size() {
			if s.crashed(off) {
				break
			}
			return FileInfo{}, s.fail(off, fmt.Errorf("%w: event of %d bytes, %d left", ErrTruncated, size, st.Size()-off))
		}
		raw := make([]byte, size)
		copy(raw, header)
		if _, err := io.ReadFull(r, raw[len(header):]); err != nil {
			return FileInfo{}, s.fail(off, fmt.Errorf("%w: read event: %v", ErrTruncated, err))
		}
		if err := s.event(raw, off); err != nil {
			return FileInfo{}, s.fail(off, err)
		}
		off += size
		if s.tx == nil {
			s.txEnd = off
		}
	}
	if s.inUse && s.closed == "" && s.crashed(off) {
		s.endCrashed(st.Size())
	}
	if err := s.endFile(); err != nil {
		return FileInfo{}, s.fail(off, err)
	}
	return s.info, nil
}

func (s *scanner) fail(off int64, err error) error {
	var fe *FileError
	if errors.As(err, &fe) {
		return err
	}
	var ce *callbackError
	if errors.As(err, &ce) {
		return ce.err
	}
	return &FileError{File: s.info.Name, Pos: off, Err: err}
}
