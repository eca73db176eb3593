package evidence

import (
	"context"
	"io"
	"sync"
)

// Merging the event logs of one scenario.
//
// One goroutine per log reads it (see batch.go) and cuts it into batches;
// a Pool of workers decodes the batches; the Merge hands out the decoded
// events of all the logs in time order, ties to the log listed first, each
// log in its file order. Memory stays bounded by the batches in flight
// (batchQueue per log), whatever the size of the logs. The verifier
// replays the merged events through its model; the report draws them.

// Pool decodes batches of lines on a fixed number of goroutines, each with
// its own Decoder. It serves any number of merges, one after the other or
// at once.
type Pool struct {
	jobs   chan *batch
	wg     sync.WaitGroup
	arrays arrayPool
}

// NewPool starts workers goroutines (at least one), each decoding with a
// Decoder from newDecoder. Close stops them.
func NewPool(workers int, newDecoder func() Decoder) *Pool {
	workers = max(workers, 1)
	p := &Pool{jobs: make(chan *batch, workers*2)}
	for range workers {
		p.wg.Go(func() {
			d := newDecoder()
			for b := range p.jobs {
				b.decode(d, &p.arrays)
				close(b.done)
			}
		})
	}
	return p
}

// Close stops the workers once the batches queued are decoded. The pool
// must not be used afterwards.
func (p *Pool) Close() {
	close(p.jobs)
	p.wg.Wait()
}

// arrayPool recycles the storage of decoded events: whoever keeps part of
// an event copies or clones it, so a batch's events are dead once the
// merge moved past the batch.
type arrayPool struct{ p sync.Pool }

// get returns storage for at least n events (a batch's most).
func (a *arrayPool) get(n int) *[]Decoded {
	if x, ok := a.p.Get().(*[]Decoded); ok {
		if cap(*x) >= n {
			return x
		}
		a.p.Put(x)
	}
	s := make([]Decoded, n)
	return &s
}

// put takes back the storage of b's events.
func (a *arrayPool) put(b *batch) {
	if b.arr != nil {
		clear(*b.arr)
		a.p.Put(b.arr)
		b.arr, b.events = nil, nil
	}
}

// MergeLog is one log of a merge: what the evidence says of it and how to
// open it (called once, on the log's reading goroutine).
type MergeLog struct {
	Ref  LogRef
	Open func() (io.ReadCloser, error)
}

// Merge hands out the events of several logs, merged in time order.
type Merge struct {
	pool    *Pool
	cancel  context.CancelFunc
	reads   []*mergeRead
	onError func(log int, e LineError)
}

// mergeRead is one log of a merge: its reading and the merge's cursor in
// its decoded batches.
type mergeRead struct {
	logRead
	ml    MergeLog
	out   chan *batch
	done  chan struct{} // closed when stats are final
	batch *batch
	pos   int
	eof   bool
}

// Merge starts reading logs and returns the merge of their events. Each
// line that is not an event goes to onError (nil: dropped) with the index
// of its log, when the merge reaches the batch holding it: so the errors
// of a log come in file order, and before the events that follow them.
// Close must be called, even after an error.
func (p *Pool) Merge(ctx context.Context, logs []MergeLog, opt ReadOptions, onError func(log int, e LineError)) *Merge {
	rctx, cancel := context.WithCancel(ctx)
	m := &Merge{pool: p, cancel: cancel, onError: onError}
	for _, ml := range logs {
		r := &mergeRead{logRead: logRead{opt: opt}, ml: ml, out: make(chan *batch, batchQueue), done: make(chan struct{})}
		m.reads = append(m.reads, r)
		go r.read(rctx, p)
	}
	return m
}

// read streams the log into batches on r.out and the pool's queue; it
// closes r.out and then r.done.
func (r *mergeRead) read(ctx context.Context, p *Pool) {
	defer close(r.done)
	defer close(r.out)
	rc, err := r.ml.Open()
	if err != nil {
		r.st.OpenErr = err
		return
	}
	defer rc.Close()
	r.scan(ctx, rc, func(b *batch) bool {
		select {
		case r.out <- b:
		case <-ctx.Done():
			return false
		}
		select {
		case p.jobs <- b:
		case <-ctx.Done():
			return false
		}
		return true
	})
}

// Next returns the next event of the merge and the index of its log; a nil
// event at the end. The event is valid until the next call of Next or
// Close. It returns ctx's error if ctx ends while it waits.
func (m *Merge) Next(ctx context.Context) (int, *Decoded, error) {
	var best *Decoded
	bi := -1
	for i, r := range m.reads {
		h, err := m.head(ctx, i, r)
		if err != nil {
			return -1, nil, err
		}
		if h != nil && (best == nil || h.Event.Time.Before(best.Event.Time)) {
			best, bi = h, i
		}
	}
	if best != nil {
		m.reads[bi].pos++
	}
	return bi, best, nil
}

// head returns the next event of log i, waiting for its batch; nil at the
// end of the log.
func (m *Merge) head(ctx context.Context, i int, r *mergeRead) (*Decoded, error) {
	for !r.eof {
		if r.batch != nil && r.pos < len(r.batch.events) {
			return &r.batch.events[r.pos], nil
		}
		var b *batch
		var ok bool
		select {
		case b, ok = <-r.out:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !ok {
			r.eof = true
			m.release(r)
			break
		}
		select {
		case <-b.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if m.onError != nil {
			for _, e := range b.errs {
				m.onError(i, e)
			}
		}
		m.release(r)
		r.batch, r.pos = b, 0
	}
	return nil, nil
}

// release hands the storage of the batch r is done with back to the pool.
func (m *Merge) release(r *mergeRead) {
	if r.batch != nil {
		m.pool.arrays.put(r.batch)
		r.batch = nil
	}
}

// Close stops reading and returns what reading each log found, in the
// order of the logs. After the last event (Next returned nil) the stats
// are complete; before it, they stop where reading was stopped.
func (m *Merge) Close() []LogStats {
	m.cancel()
	out := make([]LogStats, len(m.reads))
	for i, r := range m.reads {
		<-r.done
		m.release(r)
		out[i] = r.stats()
	}
	return out
}
