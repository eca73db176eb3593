package infra

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxRequestBytes caps the size of one request the embedded broker accepts
// (the frame's 4-byte length field). Our largest requests are produce
// requests: the bench publishes at most 10,000 records of a few hundred
// bytes per round (a few MB), and kgo closes a partition's batch at
// 1,000,012 bytes (ProducerBatchMaxBytes, which nothing here raises).
// 16 MiB is several times either, and small enough that a hostile frame
// cannot make a connection cost much: kmsg allocates up to ~16 bytes per
// byte of a malformed array before it finds the bytes missing. (Kafka's own
// socket.request.max.bytes is 100 MiB.)
const MaxRequestBytes = 16 << 20

// The guard's reasons to close a connection.
var (
	errFrameTooLarge = fmt.Errorf("request frame larger than %d bytes", MaxRequestBytes)
	errFrameShort    = errors.New("request frame too short for a request header")
	errUnknownAPIKey = errors.New("request for an unknown API key")
	errBadVersion    = errors.New("request with a negative API version")
	errUnparsable    = errors.New("request does not parse")
)

// minRequestHeader is the shortest request header: API key (2), API version
// (2), correlation id (4), client id length (2).
const minRequestHeader = 10

// reuseFrameBytes is the largest frame buffer a connection keeps for its
// next request: requests are almost all small, larger buffers are let go.
const reuseFrameBytes = 1 << 20

// guardListen wraps a kfake listen function so that every connection the
// broker accepts reads through a requestGuard. kfake reads a connection
// blindly: a request for an unknown API key makes it dereference a nil
// request (kfake client_conn.go, kreq.SetVersion), a panic in a goroutine
// of its own that kills the whole process, and it allocates whatever a
// frame's length field claims (4 GiB for ffffffff) before reading a byte
// of it. The guard hands kfake only frames it has read in full and parsed
// the way kfake will, and closes the connection on any other. (It reads
// plaintext: kfake would wrap a TLS listener around it, which StartKafka
// never asks for.)
func guardListen(listen func(network, address string) (net.Listener, error), refused *atomic.Int64) func(network, address string) (net.Listener, error) {
	return func(network, address string) (net.Listener, error) {
		ln, err := listen(network, address)
		if err != nil {
			return nil, err
		}
		return guardedListener{Listener: ln, refused: refused}, nil
	}
}

// guardedListener hands out guarded connections. It keeps Addr of the
// listener it wraps (an advertised address included).
type guardedListener struct {
	net.Listener
	refused *atomic.Int64
}

func (l guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardedConn{Conn: c, refused: l.refused}, nil
}

// guardedConn is a client connection whose Read yields whole, parsed
// request frames only, and reports the client's close only once kfake has
// answered the JoinGroup it was sent (joinhold.go). kfake reads a
// connection from one goroutine at a time (it waits for one frame before
// asking for the next), so Read needs no lock; kfake writes from another
// goroutine, hence the mutex over the answer counts.
type guardedConn struct {
	net.Conn
	refused *atomic.Int64
	buf     []byte // frame buffer, reused for small frames
	frame   []byte // the checked frame (length field included) not yet read
	err     error  // why the connection ended; returned from then on

	mu       sync.Mutex
	asked    int64         // requests handed to kfake that it answers
	answered int64         // answers kfake wrote, one Write each
	joinAt   int64         // asked when the last JoinGroup was handed (0: none)
	closed   bool          // kfake closed the connection
	wake     chan struct{} // signalled by Write and Close; made with the first JoinGroup
}

func (c *guardedConn) Read(p []byte) (int, error) {
	if len(c.frame) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		frame, err := c.next()
		if err != nil {
			var refusal guardRefusal
			if errors.As(err, &refusal) {
				c.refused.Add(1)
				c.Conn.Close() // this connection only; the broker goes on
			}
			c.awaitJoinAnswer()
			c.err = err
			return 0, err
		}
		c.frame = frame
	}
	n := copy(p, c.frame)
	c.frame = c.frame[n:]
	return n, nil
}

// guardRefusal marks an error as the guard's refusal of a frame (as against
// the client's closing the connection).
type guardRefusal struct{ err error }

func (r guardRefusal) Error() string { return "embedded broker guard: " + r.err.Error() }
func (r guardRefusal) Unwrap() error { return r.err }

// next reads one frame from the client and checks it.
func (c *guardedConn) next() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.Conn, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	switch {
	case n > MaxRequestBytes:
		return nil, guardRefusal{fmt.Errorf("%w: length field %d", errFrameTooLarge, n)}
	case n < minRequestHeader:
		return nil, guardRefusal{fmt.Errorf("%w: %d bytes", errFrameShort, n)}
	}
	frame, err := c.readFrame(size, int(n))
	if err != nil {
		return nil, err
	}
	req, err := checkRequest(frame[4:])
	if err != nil {
		return nil, guardRefusal{err}
	}
	c.handed(req)
	return frame, nil
}

// readFrame reads a frame's body of n bytes after its length field. Memory
// grows with the bytes that arrive, not with what the length field claims:
// a client that announces 16 MiB and sends nothing costs 1 MiB.
func (c *guardedConn) readFrame(size [4]byte, n int) ([]byte, error) {
	need := 4 + n
	buf := c.buf[:0]
	if cap(buf) < min(need, reuseFrameBytes) {
		buf = make([]byte, 0, min(need, reuseFrameBytes))
	}
	buf = append(buf, size[:]...)
	for len(buf) < need {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(need, 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		k, err := io.ReadFull(c.Conn, buf[len(buf):min(need, cap(buf))])
		buf = buf[:len(buf)+k]
		if err != nil {
			return nil, err
		}
	}
	if cap(buf) <= reuseFrameBytes {
		c.buf = buf
	}
	return buf, nil
}

// checkRequest parses a request body the way kfake's clientConn.read does
// (header, then kmsg's ReadFrom), so that what kfake receives parses, and
// returns the request. A panic in the parser is a refusal, not a crash.
func checkRequest(body []byte) (req kmsg.Request, err error) {
	defer func() {
		if r := recover(); r != nil {
			req, err = nil, fmt.Errorf("%w: parser panicked: %v", errUnparsable, r)
		}
	}()
	r := kbin.Reader{Src: body}
	key := r.Int16()
	version := r.Int16()
	r.Int32() // correlation id
	r.NullableString()
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("%w: %v", errFrameShort, err)
	}
	req = kmsg.RequestForKey(key)
	if req == nil {
		return nil, fmt.Errorf("%w: %d", errUnknownAPIKey, key)
	}
	if version < 0 {
		return nil, fmt.Errorf("%w: key %d version %d", errBadVersion, key, version)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
		if err := r.Complete(); err != nil {
			return nil, fmt.Errorf("%w: key %d version %d: header tags: %v", errUnparsable, key, version, err)
		}
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("%w: key %d version %d: %v", errUnparsable, key, version, err)
	}
	return req, nil
}
