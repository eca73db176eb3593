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

// Files lists the binlog files in dir (regular files named
// "<base>.NNNNNN", any base), sorted by number as SortNames sorts them.
// The index file and anything else are left out.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list binlog files in %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sorted, err := SortNames(names)
	if err != nil {
		return nil, fmt.Errorf("list binlog files in %s: %w", dir, err)
	}
	paths := make([]string, len(sorted))
	for i, n := range sorted {
		paths[i] = filepath.Join(dir, n)
	}
	return paths, nil
}

// SortNames returns the binlog file names among names ("<base>.NNNNNN",
// at least six digits), sorted by number: the order Scan needs. Other
// names (the index file, say) are left out. More than one base name, or
// two names of one number, is an error: the reader needs one sequence.
func SortNames(names []string) ([]string, error) {
	type numbered struct {
		name string
		n    uint64
	}
	var (
		out  []numbered
		base string
	)
	for _, name := range names {
		m := fileNameRE.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if base != "" && m[1] != base {
			return nil, fmt.Errorf("two binlog sequences, %q and %q", base, m[1])
		}
		base = m[1]
		n, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("binlog file %q: number out of range", name)
		}
		out = append(out, numbered{name, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n < out[j].n })
	sorted := make([]string, len(out))
	for i, f := range out {
		if i > 0 && f.n == out[i-1].n {
			return nil, fmt.Errorf("binlog files %q and %q have one number", out[i-1].name, f.name)
		}
		sorted[i] = f.name
	}
	return sorted, nil
}

// Input is one binlog file to read, already open: Name is its base name
// (it orders the sequence, checks a ROTATE's target and locates errors)
// and R its bytes from the start. The reader reads R to its end, never
// more than the bytes R holds into memory at once beyond one event, and
// does not close it.
type Input struct {
	Name string
	R    io.Reader
}

// InSequence returns inputs sorted into their one binlog sequence by name
// (SortNames). Every input must belong to it: two inputs of one name, or
// one that is not a binlog file of the sequence, is an error, so that no
// file a caller verified is silently left unread.
func InSequence(inputs []Input) ([]Input, error) {
	byName := make(map[string]io.Reader, len(inputs))
	names := make([]string, 0, len(inputs))
	for _, in := range inputs {
		if _, dup := byName[in.Name]; dup {
			return nil, fmt.Errorf("two binlog files named %s", in.Name)
		}
		byName[in.Name] = in.R
		names = append(names, in.Name)
	}
	sorted, err := SortNames(names)
	if err != nil {
		return nil, err
	}
	if len(sorted) != len(names) {
		return nil, fmt.Errorf("%d binlog files listed, %d of them in one binlog sequence", len(names), len(sorted))
	}
	out := make([]Input, len(sorted))
	for i, n := range sorted {
		out[i] = Input{Name: n, R: byName[n]}
	}
	return out, nil
}

// Scan reads the binlog files at paths, which must be one contiguous
// sequence in order, and calls fn with each committed transaction in log
// order. It returns what it learned about each file it finished. A non-nil
// error from fn stops the scan and is returned as is; a problem with the
// files is returned as a *FileError wrapping one of the sentinel errors,
// after every transaction before the problem has been passed to fn. It
// opens one file at a time and reads it as ScanInputs does.
func Scan(paths []string, fn func(Transaction) error) ([]FileInfo, error) {
	return scan(len(paths), scanMode{}, func(i int) (string, io.Reader, func(), error) {
		name := filepath.Base(paths[i])
		f, err := os.Open(paths[i])
		if err != nil {
			return name, nil, nil, &FileError{File: name, Err: fmt.Errorf("open: %w", err)}
		}
		return name, f, func() { f.Close() }, nil
	}, fn)
}

// ScanInputs is Scan over files already opened: in must be one contiguous
// sequence in order (SortNames orders names). The bytes may be anyone's:
// whatever they hold, ScanInputs returns an error (a *FileError naming the
// file and the event's offset) rather than panic, and stops at the limits
// of limits.go (ErrLimit).
func ScanInputs(in []Input, fn func(Transaction) error) ([]FileInfo, error) {
	if err := checkInputs(in); err != nil {
		return nil, err
	}
	return scanInputs(in, scanMode{}, fn)
}

// scanMode is how a scan reads: allowGaps reads a GTID gap instead of
// refusing it; streamed holds the read to the streamed limits (the
// caller keeps nothing of a transaction but what it needs).
type scanMode struct{ allowGaps, streamed bool }

// limits are the bounds on a read's transactions and row changes.
func (m scanMode) limits() (txns, changes int64) {
	if m.streamed {
		return MaxStreamedTransactions, MaxStreamedRowChanges
	}
	return MaxTransactions, MaxRowChanges
}

func scanInputs(in []Input, mode scanMode, fn func(Transaction) error) ([]FileInfo, error) {
	return scan(len(in), mode, func(i int) (string, io.Reader, func(), error) {
		return in[i].Name, in[i].R, nil, nil
	}, fn)
}

func checkInputs(in []Input) error {
	for i, f := range in {
		if f.Name == "" || f.Name != filepath.Base(f.Name) || f.R == nil {
			return fmt.Errorf("read binlog: input %d: want a base name and a reader, have %q", i, f.Name)
		}
	}
	return nil
}

// scan reads n files in order; open gives the i-th one's name and bytes
// (and how to close them, if it must be), as mode says.
func scan(n int, mode scanMode, open func(i int) (string, io.Reader, func(), error), fn func(Transaction) error) ([]FileInfo, error) {
	if n == 0 {
		return nil, errors.New("read binlog: no files")
	}
	s := newScanner(fn)
	s.allowGaps, s.reuse = mode.allowGaps, mode.streamed
	s.maxTxns, s.maxChanges = mode.limits()
	if mode.streamed {
		s.pipe = startPipe(fn)
		infos, err := scanFiles(s, n, open)
		if ferr := s.pipe.stop(); ferr != nil {
			return infos, ferr // fn's error came first: its transaction precedes where the read stopped
		}
		return infos, err
	}
	return scanFiles(s, n, open)
}

func scanFiles(s *scanner, n int, open func(i int) (string, io.Reader, func(), error)) ([]FileInfo, error) {
	var infos []FileInfo
	for i := range n {
		s.crashable = i < n-1
		name, r, closeFile, err := open(i)
		if err != nil {
			return infos, err
		}
		info, err := s.file(name, r)
		if closeFile != nil {
			closeFile()
		}
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
	return readAll(func(fn func(Transaction) error) ([]FileInfo, error) { return Scan(paths, fn) })
}

// ReadAllInputs is ReadAll over files already opened (see ScanInputs).
func ReadAllInputs(in []Input) (History, error) {
	return readAll(func(fn func(Transaction) error) ([]FileInfo, error) { return ScanInputs(in, fn) })
}

// ReadAllInputsAllowingGaps is ReadAllInputs that reads a GTID sequence
// gap (a transaction missing from a domain: a server told to skip
// numbers, a purged or filtered transaction) instead of refusing it, for
// a verifier that says INCONCLUSIVE on what a gap could hide (the
// black-box rule holes). A sequence number at or below its domain's last
// is still refused (ErrGTIDGap).
func ReadAllInputsAllowingGaps(in []Input) (History, error) {
	if err := checkInputs(in); err != nil {
		return History{}, err
	}
	return readAll(func(fn func(Transaction) error) ([]FileInfo, error) {
		return scanInputs(in, scanMode{allowGaps: true}, fn)
	})
}

// ScanInputsAllowingGaps is ScanInputs, reading a GTID gap instead of
// refusing it (as ReadAllInputsAllowingGaps), for a caller that keeps
// nothing of a transaction but what it needs: it is held to
// MaxStreamedTransactions and MaxStreamedRowChanges, not to the bounds
// of a History. A transaction's Changes and their row image maps are
// fn's to read only for the time of the call: they are reused for the
// next transaction's, an image filled again over the last one's values
// (the values in an image are not reused: fn may keep them).
func ScanInputsAllowingGaps(in []Input, fn func(Transaction) error) ([]FileInfo, error) {
	if err := checkInputs(in); err != nil {
		return nil, err
	}
	return scanInputs(in, scanMode{allowGaps: true, streamed: true}, fn)
}

func readAll(scan func(func(Transaction) error) ([]FileInfo, error)) (History, error) {
	var h History
	files, err := scan(func(t Transaction) error {
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

// file reads one binlog file event by event. It frames events itself
// (rather than BinlogParser.ParseFile) because the library treats a file
// that ends inside an event header as a clean end, and skips rows events
// whose table map is missing: both would shorten the history silently. An
// event's buffer grows with the bytes that arrive, so a size the header
// declares costs no more memory than the bytes the file really holds.
func (s *scanner) file(name string, r io.Reader) (FileInfo, error) {
	cr := &countingReader{r: r}
	br := bufio.NewReaderSize(cr, 64<<10)
	magic := make([]byte, len(replication.BinLogFileHeader))
	if n, err := io.ReadFull(br, magic); err != nil || !bytes.Equal(magic, replication.BinLogFileHeader) {
		switch {
		case err != nil && !isEOF(err):
			return FileInfo{}, &FileError{File: name, Err: fmt.Errorf("read: %w", err)}
		case err != nil && bytes.HasPrefix(replication.BinLogFileHeader, magic[:n]):
			return FileInfo{}, &FileError{File: name, Err: ErrTruncated}
		}
		return FileInfo{}, &FileError{File: name, Err: ErrNotBinlog}
	}
	s.startFile(name)
	off := int64(len(magic))
	header := make([]byte, replication.EventHeaderSize)
	crashed := false
	for {
		n, err := io.ReadFull(br, header)
		if err == io.EOF {
			break
		}
		if err != nil && !isEOF(err) {
			return FileInfo{}, s.fail(off, fmt.Errorf("read: %w", err))
		}
		if err != nil {
			if crashed = s.crashed(off); crashed {
				break
			}
			return FileInfo{}, s.fail(off, fmt.Errorf("%w: %d of %d header bytes", ErrTruncated, n, len(header)))
		}
		size := int64(binary.LittleEndian.Uint32(header[9:13]))
		switch {
		case size < int64(len(header)):
			return FileInfo{}, s.fail(off, fmt.Errorf("%w: event size %d", ErrCorrupt, size))
		case size > MaxEventBytes:
			return FileInfo{}, s.fail(off, fmt.Errorf("%w: event of %d bytes, more than MaxEventBytes (%d)", ErrLimit, size, MaxEventBytes))
		case s.info.Events >= MaxEventsPerFile:
			return FileInfo{}, s.fail(off, fmt.Errorf("%w: more than MaxEventsPerFile (%d) events", ErrLimit, MaxEventsPerFile))
		}
		raw, err := readEvent(br, header, size)
		if err != nil && !isEOF(err) {
			return FileInfo{}, s.fail(off, fmt.Errorf("read: %w", err))
		}
		if int64(len(raw)) < size {
			if crashed = s.crashed(off); crashed {
				break
			}
			return FileInfo{}, s.fail(off, fmt.Errorf("%w: event of %d bytes, %d left", ErrTruncated, size, len(raw)))
		}
		s.read += size
		err = s.event(raw, off)
		if err == nil {
			err = s.deliver()
		}
		if err != nil {
			return FileInfo{}, s.fail(off, err)
		}
		off += size
		if s.tx == nil {
			s.txEnd = off
		}
	}
	if crashed {
		// the bytes after the cut belong to the file: drain them to learn
		// its size (the reader holds none of them)
		if _, err := io.Copy(io.Discard, br); err != nil {
			return FileInfo{}, s.fail(off, fmt.Errorf("read: %w", err))
		}
	}
	s.info.Size = cr.n
	if s.inUse && s.closed == "" && s.crashed(off) {
		s.endCrashed(cr.n)
	}
	if err := s.endFile(); err != nil {
		return FileInfo{}, s.fail(off, err)
	}
	return s.info, nil
}

// readEvent reads the body of an event of size bytes after its header
// (size is at least the header's). An event of up to exactEventBytes is
// read into a buffer of its size; a larger one into a buffer that grows
// with what arrives, so that a size a file declares never allocates more
// than the file holds (plus exactEventBytes). An event cut short returns
// what there is, with no error.
func readEvent(r io.Reader, header []byte, size int64) ([]byte, error) {
	if size <= exactEventBytes {
		buf := make([]byte, size)
		n := copy(buf, header)
		m, err := io.ReadFull(r, buf[n:])
		if isEOF(err) {
			err = nil
		}
		return buf[:n+m], err
	}
	buf := bytes.NewBuffer(make([]byte, 0, exactEventBytes))
	buf.Write(header)
	_, err := buf.ReadFrom(io.LimitReader(r, size-int64(len(header))))
	return buf.Bytes(), err
}

// exactEventBytes: events up to this size (a rows event is 8 KiB by
// default, binlog_row_event_max_size) are read into a buffer of exactly
// their size. bytes.Buffer's ReadFrom wants 512 bytes free before each
// read, so an event read to its last byte was copied into a buffer twice
// its size: at a million events, 0.6 s and 260 MB for nothing.
const exactEventBytes = 64 << 10

func isEOF(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }

// countingReader counts the bytes read through it: a file's size, for a
// reader that cannot say.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
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
