package binlog

import "sync"

// pipe hands a streamed read's transactions to fn on a goroutine of its
// own, in commit order, so that the reader decodes the next transaction
// while the caller files this one (a million-row read spends about as
// long in each). A transaction's Changes and row image maps go with it
// (a slab) and come back, cleared, once fn has returned: three slabs
// turn, one filled by the reader, one queued, one with fn. The contract
// of ScanInputsAllowingGaps is unchanged: what fn is given is its own for
// the time of the call, and fn sees every transaction before the point
// where the read stops, once, in order. After fn's first error it is not
// called again, and the read stops at its next transaction.
type pipe struct {
	work chan slab
	free chan slab
	done chan struct{}

	mu  sync.Mutex
	err error
}

// slab is one transaction and the row image maps its Changes use.
type slab struct {
	t      Transaction
	images []image
}

const pipeSlabs = 3

func startPipe(fn func(Transaction) error) *pipe {
	p := &pipe{work: make(chan slab, pipeSlabs-2), free: make(chan slab, pipeSlabs), done: make(chan struct{})}
	for range pipeSlabs - 1 {
		p.free <- slab{}
	}
	go func() {
		defer close(p.done)
		var err error
		for sl := range p.work {
			if err == nil {
				if err = fn(sl.t); err != nil {
					p.mu.Lock()
					p.err = err
					p.mu.Unlock()
				}
			}
			clear(sl.t.Changes) // what they refer to is not kept alive by the slab
			p.free <- sl
		}
	}()
	return p
}

// send hands t, with the scanner's images, to fn's goroutine and gives
// the scanner a free slab for the next transaction.
func (p *pipe) send(s *scanner, t *Transaction) error {
	if err := p.failed(); err != nil {
		return &callbackError{err}
	}
	p.work <- slab{t: *t, images: s.images}
	sl := <-p.free
	s.spare, s.images = sl.t.Changes, sl.images
	return nil
}

func (p *pipe) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// stop waits for fn to have been given every transaction sent and
// returns its error.
func (p *pipe) stop() error {
	close(p.work)
	<-p.done
	return p.failed()
}
