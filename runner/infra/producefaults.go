package infra

import (
	"encoding/binary"
	"errors"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrNoBrokerControl: produce faults need the embedded broker; an external
// cluster cannot be told to fail a request.
var ErrNoBrokerControl = errors.New("produce faults need the embedded broker (kfake): an external Kafka cluster cannot be controlled")

// ProduceFaults makes the embedded broker fail the produce requests that
// carry a record with a given event_id header, at the protocol (kfake's
// Fault and ControlKey), so that a real client sees a real broker answer
// or silence. Three failures:
//
//   - Refuse: the broker answers INVALID_RECORD and appends nothing (a
//     non-retriable error: the client fails the record at once);
//   - Swallow: the broker reads the request and never answers, and
//     appends nothing: the client times out;
//   - LoseAck: the broker appends the record and answers REQUEST_TIMED_OUT,
//     the answer a broker gives when it cannot confirm a write in time;
//     the client retries the same idempotent batch (the broker recognises
//     it and does not append it twice, and answers the same) until it
//     gives up: the record is in the log, the acknowledgement is lost.
//
// Each lasts until Clear. A ProduceFaults is safe for concurrent use.
type ProduceFaults struct {
	c *kfake.Cluster

	mu      sync.Mutex
	faults  []*kfake.FaultHandle
	byEvent map[string]*kfake.FaultHandle
	swallow map[string]int // event id -> requests swallowed
	cleared bool
}

// ProduceFaults returns the produce faults of the embedded broker, or
// ErrNoBrokerControl for an external cluster. Clear removes what they
// installed.
func (k *Kafka) ProduceFaults() (*ProduceFaults, error) {
	if k.cluster == nil {
		return nil, ErrNoBrokerControl
	}
	f := &ProduceFaults{c: k.cluster, byEvent: map[string]*kfake.FaultHandle{}, swallow: map[string]int{}}
	// One control for every swallowed event id, kept until Clear: a
	// control function handles one request unless it keeps itself.
	k.cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.c.KeepControl()
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.cleared {
			f.c.DropControl()
			return nil, nil, false
		}
		for _, id := range eventIDsOf(req) {
			if n, ok := f.swallow[id]; ok {
				f.swallow[id] = n + 1
				return nil, nil, true // handled, no answer: the client times out
			}
		}
		return nil, nil, false
	})
	return f, nil
}

// Refuse makes the broker answer INVALID_RECORD to the next produce
// request that carries eventID, without appending it.
func (f *ProduceFaults) Refuse(eventID string) {
	f.add(eventID, kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.InvalidRecord, Count: 1, When: carries(eventID)})
}

// LoseAck makes the broker append eventID's record and answer every
// produce request carrying it REQUEST_TIMED_OUT, until Clear.
func (f *ProduceFaults) LoseAck(eventID string) {
	f.add(eventID, kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.RequestTimedOut, Count: -1, When: carries(eventID)})
}

// Swallow makes the broker leave every produce request carrying eventID
// unanswered, appending nothing, until Clear.
func (f *ProduceFaults) Swallow(eventID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.swallow[eventID]; !ok {
		f.swallow[eventID] = 0
	}
}

func (f *ProduceFaults) add(eventID string, fault kfake.Fault) {
	h := f.c.Fault(fault)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, h)
	f.byEvent[eventID] = h
}

// Hits returns how many produce requests carrying eventID a fault
// answered (or left unanswered).
func (f *ProduceFaults) Hits(eventID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.swallow[eventID]
	if h := f.byEvent[eventID]; h != nil {
		n += h.Hits()
	}
	return n
}

// Clear removes every fault; the broker answers normally again.
func (f *ProduceFaults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.faults {
		h.Remove()
	}
	f.faults = nil
	f.swallow = map[string]int{}
	f.cleared = true
}

// carries is a kfake Fault's When: the request is a produce request with
// a record whose event_id header is eventID. It runs on the broker's
// goroutine and only parses.
func carries(eventID string) func(kmsg.Request) bool {
	return func(req kmsg.Request) bool { return slices.Contains(eventIDsOf(req), eventID) }
}

// decompressor decodes compressed record batches (kgo compresses with
// snappy by default).
var decompressor = kgo.DefaultDecompressor()

// eventIDsOf returns the event_id headers of the records a produce request
// carries; a batch that cannot be decoded contributes nothing.
func eventIDsOf(req kmsg.Request) []string {
	pr, ok := req.(*kmsg.ProduceRequest)
	if !ok {
		return nil
	}
	var out []string
	for _, t := range pr.Topics {
		for _, p := range t.Partitions {
			out = append(out, batchEventIDs(p.Records)...)
		}
	}
	return out
}

// batchEventIDs decodes the record batches in raw (v2, the only format
// kgo produces) and returns their records' event_id headers.
func batchEventIDs(raw []byte) []string {
	var out []string
	for len(raw) >= 12 {
		n := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12]))) // first offset, length, then length bytes
		if n <= 12 || n > len(raw) {
			return out
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:n]); err != nil || b.Magic != 2 {
			return out
		}
		raw = raw[n:]
		recs := b.Records
		if codec := kgo.CompressionCodecType(b.Attributes & 0x07); codec != kgo.CodecNone {
			var err error
			if recs, err = decompressor.Decompress(recs, codec); err != nil {
				return out
			}
		}
		for range b.NumRecords {
			l, k := binary.Varint(recs)
			if k <= 0 || l < 0 || int(l) > len(recs)-k {
				break
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:k+int(l)]); err != nil {
				break
			}
			recs = recs[k+int(l):]
			for _, h := range r.Headers {
				if h.Key == "event_id" {
					out = append(out, string(h.Value))
				}
			}
		}
	}
	return out
}
