package infra

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxRequestBytes bounds one request frame the embedded broker accepts.
// Our clients send produce batches of at most 1 MiB (kgo's default
// ProducerBatchMaxBytes) and far smaller requests otherwise; 64 MiB leaves
// room for any Kafka client's defaults while a length field of ffffffff no
// longer makes the broker allocate 4 GiB.
const MaxRequestBytes = 64 << 20

// minRequestBytes is the smallest request header: api key, version,
// correlation id and the length of a null client id.
const minRequestBytes = 2 + 2 + 4 + 2

// errFrameRefused is what the broker's reader sees in place of a frame the
// guard refused: it ends that connection and nothing else.
var errFrameRefused = errors.New("kafka frame refused")

// guardListen wraps listen so that every connection the embedded broker
// accepts passes through a frame guard. kfake parses a request on the
// connection's goroutine and calls methods on the request type its api key
// names without checking that the key exists, so 20 malformed bytes panic
// the whole process (the broker, and a run that embeds it); and it
// allocates whatever a length field says. The guard reads each frame
// itself, refuses a length over MaxRequestBytes or under a header, an api
// key or version that kmsg does not know, and a body that does not parse
// as that request, and closes that connection; only whole frames that
// parse reach kfake, byte for byte.
func guardListen(listen func(network, address string) (net.Listener, error)) func(network, address string) (net.Listener, error) {
	return func(network, address string) (net.Listener, error) {
		ln, err := listen(network, address)
		if err != nil {
			return nil, err
		}
		return guardedListener{ln}, nil
	}
}

type guardedListener struct{ net.Listener }

func (l guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardedConn{Conn: c}, nil
}

// guardedConn hands the broker one checked frame at a time.
type guardedConn struct {
	net.Conn
	mu      sync.Mutex
	pending []byte // the rest of the current checked frame, length included
}

func (c *guardedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		frame, err := readFrame(c.Conn)
		if err != nil {
			c.Conn.Close()
			return 0, err
		}
		c.pending = frame
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// readFrame reads one request frame from r and returns it whole (its
// 4-byte length first) when it is a request kfake can take.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > MaxRequestBytes || n < minRequestBytes {
		return nil, fmt.Errorf("%w: length %d outside [%d, %d]", errFrameRefused, n, minRequestBytes, MaxRequestBytes)
	}
	frame := make([]byte, 4+int(n))
	copy(frame, size[:])
	if _, err := io.ReadFull(r, frame[4:]); err != nil {
		return nil, err
	}
	if err := checkRequest(frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}

// checkRequest parses body as kfake will (header, then the request of its
// key and version) and says whether it can.
func checkRequest(body []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: the request does not parse: %v", errFrameRefused, r)
		}
	}()
	rd := kbin.Reader{Src: body}
	key := rd.Int16()
	version := rd.Int16()
	rd.Int32() // correlation id
	rd.NullableString()
	if !rd.Ok() {
		return fmt.Errorf("%w: short header", errFrameRefused)
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return fmt.Errorf("%w: unknown api key %d", errFrameRefused, key)
	}
	if version < 0 || version > req.MaxVersion() {
		return fmt.Errorf("%w: api key %d version %d unknown", errFrameRefused, key, version)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&rd)
		if !rd.Ok() {
			return fmt.Errorf("%w: short header", errFrameRefused)
		}
	}
	if err := req.ReadFrom(rd.Src); err != nil {
		return fmt.Errorf("%w: api key %d version %d: %v", errFrameRefused, key, version, err)
	}
	return nil
}
