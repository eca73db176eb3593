package evidence

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// MaxLineBytes bounds one event line for readers: a longer line is an
// error, not an allocation.
const MaxLineBytes = 1 << 20

// Reader errors.
var (
	ErrLineTooLong = errors.New("event line exceeds 1 MiB")
	// ErrTruncated marks a final line without its newline, as a process
	// killed in the middle of a write leaves it.
	ErrTruncated = errors.New("final line is truncated (no newline)")
)

// Log writes events of one actor (or one in-process group of actors) as
// JSON Lines. Each event is one Write of one whole line, so a process killed
// mid-run leaves at most a truncated last line. Log is safe for concurrent
// use; seq is strictly increasing in file order.
//
// A Log made buffered (Buffer) collects lines in memory and writes them
// when the buffer fills, at Flush and at Close: a process killed between
// two flushes loses the lines since the last one (and may leave a cut
// last line), so an actor that can be killed at a fault point flushes
// before it.
type Log struct {
	mu       sync.Mutex
	w        io.Writer
	bw       *bufio.Writer // non-nil when buffered; writes to w
	f        *os.File
	runID    string
	scenario string
	seq      int64
	now      func() time.Time
	buf      bytes.Buffer
	err      error
}

// NewLog returns a Log writing to w. now defaults to time.Now.
func NewLog(w io.Writer, runID, scenario string, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{w: w, runID: runID, scenario: scenario, now: now}
}

// CreateLog creates (truncating) the file at path and returns a Log on it.
func CreateLog(path, runID, scenario string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create event log %s: %w", path, err)
	}
	l := NewLog(f, runID, scenario, nil)
	l.f = f
	return l, nil
}

// Emit stamps e with seq, time, run id and scenario and writes it. After
// the first write error every Emit returns that error.
func (l *Log) Emit(e Event) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.seq++
	e.Seq = l.seq
	e.Time = l.now().UTC()
	e.RunID = l.runID
	e.Scenario = l.scenario
	l.buf.Reset()
	enc := json.NewEncoder(&l.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&e); err != nil {
		l.err = fmt.Errorf("encode event: %w", err)
		return l.err
	}
	w := l.w
	if l.bw != nil {
		w = l.bw
	}
	if _, err := w.Write(l.buf.Bytes()); err != nil {
		l.err = fmt.Errorf("write event: %w", err)
		return l.err
	}
	return nil
}

// Buffer makes the Log buffer up to size bytes before writing (size <= 0:
// unbuffered, the default), flushing what an earlier buffer holds first.
// Call Flush or Close to write what is buffered.
func (l *Log) Buffer(size int) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.flushLocked(); err != nil {
		return err
	}
	l.bw = nil
	if size > 0 {
		l.bw = bufio.NewWriterSize(l.w, size)
	}
	return nil
}

// Flush writes what a buffered Log holds (nothing to do when unbuffered).
// After the first write error every Flush returns that error.
func (l *Log) Flush() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushLocked()
}

func (l *Log) flushLocked() error {
	if l.err != nil {
		return l.err
	}
	if l.bw == nil {
		return nil
	}
	if err := l.bw.Flush(); err != nil {
		l.err = fmt.Errorf("write event: %w", err)
		return l.err
	}
	return nil
}

// Seq returns the last seq written.
func (l *Log) Seq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// Close flushes a buffered Log, then syncs and closes the file of a Log
// made by CreateLog.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var ferr error
	if l.bw != nil {
		ferr = l.flushLocked()
	}
	if l.f == nil {
		return ferr
	}
	err := l.f.Sync()
	if ferr != nil {
		err = ferr
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// Line is one raw line of a log with its 1-based line number.
type Line struct {
	No  int64
	Raw []byte
}

// ScanLines calls fn for each line of r. It stops with ErrLineTooLong for a
// line over MaxLineBytes (without buffering it) and returns ErrTruncated,
// after calling fn for it, when the last line lacks its newline. fn's Raw
// is only valid during the call.
func ScanLines(r io.Reader, fn func(Line) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		no   int64
		long []byte
	)
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > MaxLineBytes {
				return fmt.Errorf("line %d: %w", no+1, ErrLineTooLong)
			}
			long = append(long, chunk...)
			continue
		}
		if len(long) > 0 {
			if len(long)+len(chunk) > MaxLineBytes+1 {
				return fmt.Errorf("line %d: %w", no+1, ErrLineTooLong)
			}
			chunk = append(long, chunk...)
			long = long[:0]
		}
		if len(chunk) > 0 {
			no++
			complete := chunk[len(chunk)-1] == '\n'
			if complete {
				chunk = chunk[:len(chunk)-1]
			}
			if len(chunk) > MaxLineBytes {
				return fmt.Errorf("line %d: %w", no, ErrLineTooLong)
			}
			if ferr := fn(Line{No: no, Raw: chunk}); ferr != nil {
				return ferr
			}
			if !complete {
				return fmt.Errorf("line %d: %w", no, ErrTruncated)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read line %d: %w", no+1, err)
		}
	}
}

// DecodeEvent decodes one line strictly: unknown fields and trailing data
// are errors.
func DecodeEvent(raw []byte) (Event, error) {
	var e Event
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, err
	}
	if dec.More() {
		return e, errors.New("trailing data after the event")
	}
	return e, nil
}

// ReadEvents reads a whole log (for tests and small logs). Only the final
// line may be cut off (a killed process): it is returned as ErrTruncated
// with the events before it. A line that does not decode anywhere else is
// an error naming it.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	defer f.Close()
	return ReadEventsFrom(f, path)
}

// ReadEventsFrom is ReadEvents of the log r, named path in errors: the
// verifier reads a bundle's logs through its gate (evidence/bundle), not
// by path. A line longer than MaxLineBytes stops it (ErrLineTooLong).
func ReadEventsFrom(r io.Reader, path string) ([]Event, error) {
	var (
		out []Event
		bad error // a line that did not decode; fatal unless it was the cut-off last one
	)
	err := ScanLines(r, func(l Line) error {
		if bad != nil {
			return bad
		}
		e, err := DecodeEvent(l.Raw)
		if err != nil {
			bad = fmt.Errorf("%s line %d: %w", path, l.No, err)
			return nil
		}
		out = append(out, e)
		return nil
	})
	if err == nil && bad != nil {
		err = bad
	}
	return out, err
}

// FileDigest returns the sha256 (hex) and the number of lines of a file.
func FileDigest(path string) (sum string, lines int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("digest %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	br := bufio.NewReaderSize(f, 64<<10)
	buf := make([]byte, 64<<10)
	for {
		n, rerr := br.Read(buf)
		h.Write(buf[:n])
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return "", 0, fmt.Errorf("digest %s: %w", path, rerr)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), lines, nil
}
