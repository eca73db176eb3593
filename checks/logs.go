package checks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Reading the event logs of one scenario.
//
// Each log is read once, streaming: one goroutine per log reads it through
// sha256 and a newline counter (for the digest and line count the evidence
// records) and cuts it into batches of lines; a pool of workers (one per
// CPU) decodes the batches; the merger takes the decoded events of all the
// scenario's logs in time order (ties: the order of the logs in the
// evidence), keeping each log's own order, and folds them into the model.
// Memory stays bounded by the batches in flight, whatever the log size.

const (
	batchLines = 1024
	batchBytes = 256 << 10
	batchQueue = 2 // batches a log may have decoded ahead of the merger
)

// maxSlowLines bounds, per log, the lines that need the full JSON Schema
// validator (~100-165 us each): a hostile log of a million schema-invalid
// lines would otherwise take minutes. Past it, lines the fast path cannot
// decide are not checked and the log fails with log-too-broken.
const maxSlowLines = 20000

// lineBatch is a run of consecutive lines of one log.
type lineBatch struct {
	lr     *logRead
	buf    []byte
	ends   []int
	first  int64 // line number of the first line
	text   string
	arr    *[batchLines]parsedEvent // pooled storage of events, if any
	events []parsedEvent
	probs  []batchProblem
	done   chan struct{}
}

type batchProblem struct {
	line int64
	prob *lineProblem
}

// eventArrays recycles the decoded events of batches the merger is done
// with: the model copies or clones whatever it keeps of an event, so a
// batch's events are dead once every one of them was folded.
var eventArrays = sync.Pool{New: func() any { return new([batchLines]parsedEvent) }}

func (b *lineBatch) decode(d *fastDecoder) {
	// The buffer is never written again: the text can share it.
	b.text = unsafe.String(unsafe.SliceData(b.buf), len(b.buf))
	b.buf = nil
	if len(b.ends) <= batchLines {
		b.arr = eventArrays.Get().(*[batchLines]parsedEvent)
		b.events = b.arr[:len(b.ends)]
	} else {
		b.events = make([]parsedEvent, len(b.ends))
	}
	k, start := 0, 0
	for i, end := range b.ends {
		line := b.text[start:end]
		start = end
		pe := &b.events[k]
		if !d.decode(line, pe) {
			if b.lr != nil && b.lr.slow.Add(1) > maxSlowLines {
				continue // counted: the merger reports log-too-broken
			}
			if p := slowDecode([]byte(line), pe); p != nil {
				b.probs = append(b.probs, batchProblem{line: b.first + int64(i), prob: p})
				continue
			}
		}
		pe.line = b.first + int64(i)
		k++
	}
	b.events = b.events[:k]
}

// decoderPool decodes batches on a fixed number of goroutines.
type decoderPool struct {
	jobs chan *lineBatch
	wg   sync.WaitGroup
}

func newDecoderPool(workers int) *decoderPool {
	p := &decoderPool{jobs: make(chan *lineBatch, workers*2)}
	for range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			d := newFastDecoder()
			for b := range p.jobs {
				b.decode(d)
				close(b.done)
			}
		}()
	}
	return p
}

func (p *decoderPool) close() {
	close(p.jobs)
	p.wg.Wait()
}

// logRead is one log being read, and what reading it found.
type logRead struct {
	idx  int
	ref  evidence.LogRef
	abs  string
	out  chan *lineBatch
	done chan struct{} // closed when the fields below are final

	sum       string
	lines     int64
	slow      atomic.Int64 // lines that needed the full validator
	truncated int64        // line number of a cut last line (0: none)
	tooLong   int64        // line number of a line over evidence.MaxLineBytes (0: none)
	err       error
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

// read streams the log file into batches on lr.out and the pool.
func (lr *logRead) read(ctx context.Context, pool *decoderPool) {
	f, err := os.Open(lr.abs)
	if err != nil {
		lr.err = err
		close(lr.out)
		close(lr.done)
		return
	}
	defer f.Close()
	lr.readFrom(ctx, f, pool)
}

// readFrom streams r (the log's bytes) into batches on lr.out and the
// pool; it closes lr.out and then lr.done.
func (lr *logRead) readFrom(ctx context.Context, r io.Reader, pool *decoderPool) {
	defer close(lr.done)
	defer close(lr.out)
	lr.scan(ctx, r, func(b *lineBatch) bool {
		select {
		case lr.out <- b:
		case <-ctx.Done():
			return false
		}
		select {
		case pool.jobs <- b:
		case <-ctx.Done():
			return false
		}
		return true
	})
}

// scan reads r through sha256 and a newline counter, cuts it into batches
// and hands each to emit (false: stop). It fills in the digest, the line
// count and what went wrong.
func (lr *logRead) scan(ctx context.Context, r io.Reader, emit func(*lineBatch) bool) {
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(r, h)}
	var cur *lineBatch
	send := func() bool {
		if cur == nil || len(cur.ends) == 0 {
			return true
		}
		b := cur
		cur = nil
		return emit(b)
	}
	var last int64
	err := evidence.ScanLines(cr, func(l evidence.Line) error {
		// Send a full batch before adding a line, never right after: the
		// last line read stays in cur, so a cut last line can be removed.
		if cur != nil && (len(cur.ends) >= batchLines || len(cur.buf) >= batchBytes) && !send() {
			return ctx.Err()
		}
		if cur == nil {
			cur = &lineBatch{lr: lr, first: l.No, done: make(chan struct{}), buf: make([]byte, 0, batchBytes+4096),
				ends: make([]int, 0, batchLines)}
		}
		cur.buf = append(cur.buf, l.Raw...)
		cur.ends = append(cur.ends, len(cur.buf))
		last = l.No
		return nil
	})
	switch {
	case err == nil:
	case errors.Is(err, evidence.ErrTruncated):
		lr.truncated = last
		if cur != nil && len(cur.ends) > 0 && cur.first+int64(len(cur.ends))-1 == last {
			cur.ends = cur.ends[:len(cur.ends)-1]
			if n := len(cur.ends); n > 0 {
				cur.buf = cur.buf[:cur.ends[n-1]]
			} else {
				cur.buf = cur.buf[:0]
			}
		}
	case errors.Is(err, evidence.ErrLineTooLong):
		lr.tooLong = last + 1
		if _, cerr := io.Copy(io.Discard, cr); cerr != nil {
			lr.err = cerr
		}
	case ctx.Err() != nil:
		return
	default:
		lr.err = err
	}
	if !send() {
		return
	}
	lr.sum = hex.EncodeToString(h.Sum(nil))
	lr.lines = cr.lines
}

// logCursor walks the decoded events of one log in order.
type logCursor struct {
	lr    *logRead
	batch *lineBatch
	pos   int
	eof   bool
}

// head returns the log's next event, waiting for its batch; nil at the end.
// Line problems of each batch are handed to onProblem as the batch is
// reached.
func (c *logCursor) head(ctx context.Context, onProblem func(*logRead, batchProblem)) (*parsedEvent, error) {
	for !c.eof {
		if c.batch != nil && c.pos < len(c.batch.events) {
			return &c.batch.events[c.pos], nil
		}
		var b *lineBatch
		var ok bool
		select {
		case b, ok = <-c.lr.out:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !ok {
			c.eof = true
			c.release()
			c.batch = nil
			break
		}
		select {
		case <-b.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		for _, p := range b.probs {
			onProblem(c.lr, p)
		}
		c.release()
		c.batch, c.pos = b, 0
	}
	return nil, nil
}

// release hands the events of the batch the cursor is done with back to
// the pool.
func (c *logCursor) release() {
	if b := c.batch; b != nil && b.arr != nil {
		clear(b.arr[:])
		eventArrays.Put(b.arr)
		b.arr, b.events = nil, nil
	}
}

// resolveLog checks that rel names a regular file inside dir (the evidence
// file's directory), after following symlinks, and returns its path.
func resolveLog(dir, realDir, rel string) (string, string, error) {
	switch {
	case rel == "":
		return "", "", errors.New("empty path")
	case strings.HasPrefix(rel, "/") || filepath.IsAbs(rel) || filepath.VolumeName(rel) != "":
		return "", "", errors.New("absolute path: logs must be relative to the evidence file")
	case strings.Contains(rel, `\`):
		return "", "", errors.New("backslash in path")
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", "", errors.New(`".." in path: logs must stay inside the evidence file's directory`)
		}
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", "", os.ErrNotExist
		}
		return "", "", err
	}
	r, err := filepath.Rel(realDir, real)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", "", fmt.Errorf("resolves (through a symlink) to %s, outside the evidence file's directory", real)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", "", err
	}
	if !st.Mode().IsRegular() {
		return "", "", fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	return p, real, nil
}
