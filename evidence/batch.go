package evidence

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"sync/atomic"
	"time"
	"unsafe"
)

// Reading one event log as decoded batches of lines.
//
// A log is read once, streaming, through sha256 and a newline counter (for
// the digest and line count the evidence records), and cut into batches of
// consecutive lines; a Decoder turns each line of a batch into a Decoded
// event or a LineError. Merge does this for all the logs of a scenario at
// once, decoding on a Pool of workers; ReadLog does it for one log on the
// calling goroutine.

const (
	batchLines = 1024 // default ReadOptions.BatchLines
	lineBytes  = 256  // a batch holds up to this many bytes per line it may hold
	batchQueue = 2    // batches a log may have decoded ahead of the merger
)

// Decoded is one decoded event line: the event, where it was, and storage
// its pointer fields can point into (see Box), so that a decoder need not
// allocate a box per number. Never copy a Decoded whose Event is still
// used: take its address.
type Decoded struct {
	Event Event
	Line  int64 // 1-based line number in its log

	ints  [7]int64
	nints int
	i32   int32
	t     time.Time
	used  uint8 // usedTime, used32
}

const (
	used32 = 1 << iota
	usedTime
)

// Box returns a pointer to n in d's own storage (or a new one once that is
// used up).
func (d *Decoded) Box(n int64) *int64 {
	var p *int64
	if d.nints < len(d.ints) {
		p = &d.ints[d.nints]
		d.nints++
	} else {
		p = new(int64)
	}
	*p = n
	return p
}

// Box32 returns a pointer to n in d's own storage (or a new one for a
// second int32 of the same event).
func (d *Decoded) Box32(n int32) *int32 {
	p := &d.i32
	if d.used&used32 != 0 {
		p = new(int32)
	}
	d.used |= used32
	*p = n
	return p
}

// BoxTime returns a pointer to t in d's own storage (or a new one for a
// second time of the same event).
func (d *Decoded) BoxTime(t time.Time) *time.Time {
	p := &d.t
	if d.used&usedTime != 0 {
		p = new(time.Time)
	}
	d.used |= usedTime
	*p = t
	return p
}

// Reset empties d for the next line.
func (d *Decoded) Reset() {
	d.Event = Event{}
	d.nints, d.used = 0, 0
}

// A Decoder decodes the lines of logs on one goroutine (it may keep caches):
// a Pool makes one per worker.
type Decoder interface {
	// Fast decodes line into d when it can cheaply decide that the line is
	// a valid event; false means undecided (d is then garbage), and Full
	// is asked.
	Fast(line string, d *Decoded) bool
	// Full decodes line into d, or returns why it is not a valid event.
	Full(line string, d *Decoded) error
}

// LineError is a line of a log that is not a valid event.
type LineError struct {
	Line int64
	Err  error
	// Cut is set for the final line of a log cut off without its newline
	// (only with ReadOptions.DecodeCut: otherwise that line is not
	// decoded).
	Cut bool
}

// ReadOptions say how the lines of a log are read.
type ReadOptions struct {
	// MaxFullLines bounds, per log, the lines that need Decoder.Full (a
	// hostile log of a million lines that all need a slow validator would
	// take minutes). Past it, such lines are neither decoded nor reported,
	// only counted in LogStats.Full. 0: no bound.
	MaxFullLines int64
	// DecodeCut decodes a final line that lacks its newline, as a process
	// killed mid-write leaves it, like any other line (as a LineError with
	// Cut when it is not an event). By default it is not decoded: only
	// LogStats.Truncated names it.
	DecodeCut bool
	// BatchLines is how many lines a batch holds at most (and 256 bytes
	// per line, whichever comes first); a log has at most 2 batches
	// decoded ahead of the merge and one in use. Default: 1024, for
	// throughput; fewer hold less memory.
	BatchLines int
}

func (o ReadOptions) lines() int {
	if o.BatchLines > 0 {
		return o.BatchLines
	}
	return batchLines
}

// LogStats is what reading one log found.
type LogStats struct {
	SHA256 string // of the whole file
	Lines  int64  // newlines in the whole file
	// Read is the number of the last line read (the lines after a line
	// over MaxLineBytes, or after a read error, are not).
	Read int64
	// Truncated is the number of a final line cut off without its newline;
	// 0: none.
	Truncated int64
	// TooLong is the number of a line over MaxLineBytes, where reading
	// stopped (the digest and line count still cover the whole file); 0:
	// none.
	TooLong int64
	// Full counts the lines that needed Decoder.Full, including those
	// past ReadOptions.MaxFullLines.
	Full int64
	// OpenErr is why the log could not be opened, ReadErr why reading it
	// stopped early.
	OpenErr, ReadErr error
}

// logRead is one log being read.
type logRead struct {
	opt  ReadOptions
	full atomic.Int64
	st   LogStats
}

// batch is a run of consecutive lines of one log, decoded in place.
type batch struct {
	lr     *logRead
	buf    []byte
	ends   []int
	first  int64 // line number of the first line
	cut    int64 // line number of a cut final line kept for decoding (0: none)
	text   string
	arr    *[]Decoded // pooled storage of events, if any
	events []Decoded
	errs   []LineError
	done   chan struct{}
}

// decode decodes every line of b with d, into storage from arrays.
func (b *batch) decode(d Decoder, arrays *arrayPool) {
	// The buffer is never written again: the text can share it.
	b.text = unsafe.String(unsafe.SliceData(b.buf), len(b.buf))
	b.buf = nil
	b.arr = arrays.get(b.lr.opt.lines())
	b.events = (*b.arr)[:len(b.ends)]
	k, start := 0, 0
	for i, end := range b.ends {
		line := b.text[start:end]
		start = end
		no := b.first + int64(i)
		pe := &b.events[k]
		pe.Reset()
		if !d.Fast(line, pe) {
			if n := b.lr.full.Add(1); b.lr.opt.MaxFullLines > 0 && n > b.lr.opt.MaxFullLines {
				continue // counted in LogStats.Full
			}
			pe.Reset()
			if err := d.Full(line, pe); err != nil {
				b.errs = append(b.errs, LineError{Line: no, Err: err, Cut: no == b.cut})
				continue
			}
		}
		pe.Line = no
		k++
	}
	b.events = b.events[:k]
}

// countingReader counts the newlines that pass through it.
type countingReader struct {
	r     io.Reader
	lines int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.lines += int64(bytes.Count(p[:n], []byte{'\n'}))
	return n, err
}

// scan reads r through sha256 and a newline counter, cuts it into batches
// and hands each to emit (false: stop). It fills in lr.st but for Full.
func (lr *logRead) scan(ctx context.Context, r io.Reader, emit func(*batch) bool) {
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(r, h)}
	var cur *batch
	maxLines := lr.opt.lines()
	maxBytes := maxLines * lineBytes
	send := func() bool {
		if cur == nil || len(cur.ends) == 0 {
			return true
		}
		b := cur
		cur = nil
		return emit(b)
	}
	var last int64
	err := ScanLines(cr, func(l Line) error {
		// Send a full batch before adding a line, never right after: the
		// last line read stays in cur, so a cut last line can be removed.
		if cur != nil && (len(cur.ends) >= maxLines || len(cur.buf) >= maxBytes) && !send() {
			return ctx.Err()
		}
		if cur == nil {
			cur = &batch{lr: lr, first: l.No, done: make(chan struct{}), buf: make([]byte, 0, maxBytes+4096),
				ends: make([]int, 0, maxLines)}
		}
		cur.buf = append(cur.buf, l.Raw...)
		cur.ends = append(cur.ends, len(cur.buf))
		last = l.No
		return nil
	})
	lr.st.Read = last
	switch {
	case err == nil:
	case errors.Is(err, ErrTruncated):
		lr.st.Truncated = last
		switch {
		case cur == nil || len(cur.ends) == 0 || cur.first+int64(len(cur.ends))-1 != last:
		case lr.opt.DecodeCut:
			cur.cut = last
		default:
			cur.ends = cur.ends[:len(cur.ends)-1]
			if n := len(cur.ends); n > 0 {
				cur.buf = cur.buf[:cur.ends[n-1]]
			} else {
				cur.buf = cur.buf[:0]
			}
		}
	case errors.Is(err, ErrLineTooLong):
		lr.st.TooLong = last + 1
		if _, cerr := io.Copy(io.Discard, cr); cerr != nil {
			lr.st.ReadErr = cerr
		}
	case ctx.Err() != nil:
		return
	default:
		lr.st.ReadErr = err
	}
	if !send() {
		return
	}
	lr.st.SHA256 = hex.EncodeToString(h.Sum(nil))
	lr.st.Lines = cr.lines
}

// stats returns what reading found, once reading is over.
func (lr *logRead) stats() LogStats {
	st := lr.st
	st.Full = lr.full.Load()
	return st
}

// ReadLog reads one log from r and decodes it with d on the calling
// goroutine, handing each event and each bad line to fn in file order
// (event nil for a bad line, err nil for an event). The event is valid
// only during the call. It is the sequential form of Merge, for one log
// (deterministic, as coverage-guided fuzzing needs).
func ReadLog(ctx context.Context, r io.Reader, d Decoder, opt ReadOptions, fn func(ev *Decoded, err *LineError)) LogStats {
	lr := &logRead{opt: opt}
	arrays := &arrayPool{}
	lr.scan(ctx, r, func(b *batch) bool {
		b.decode(d, arrays)
		i, j := 0, 0
		for i < len(b.events) || j < len(b.errs) {
			if j < len(b.errs) && (i == len(b.events) || b.errs[j].Line < b.events[i].Line) {
				fn(nil, &b.errs[j])
				j++
				continue
			}
			fn(&b.events[i], nil)
			i++
		}
		arrays.put(b)
		return true
	})
	return lr.stats()
}
