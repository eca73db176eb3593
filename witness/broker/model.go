// Package broker reads what a Kafka broker kept of a run: every record of
// the run's topics (offset, key, value, headers, timestamp), each
// partition's offsets, and every consumer group's committed offsets. It is
// the broker's witness for the verifier (design principle 6, "Witnessed, not
// self-reported"): a relay's "published at offset 3" and a consumer's
// "committed offset 4" are claims; the broker's log is what happened.
//
// Three ways in, one model (Log):
//
//   - ReadDataFS (and ReadDataDir, its wrapper for a directory): the data
//     directory an embedded kfake broker persisted (kfake.DataDir). Every
//     file is checked against kfake's layout and the reader's limits
//     (MaxTopics, MaxPartitions, MaxFileBytes, ...), then the checked
//     record batches are decoded (kmsg, as a client decodes them) and
//     groups.log replayed as kfake replays it; nothing is written and no
//     broker started. The tests hold the result to kfake serving the
//     same directory to a client.
//   - Read: any reachable cluster, live.
//   - Dump writes a live cluster's log as a JSON Lines file into a witness
//     directory, and ReadDump reads it back, so that an external broker's
//     record can travel with the evidence; ReadDumpFrom reads one from
//     any io.Reader, within MaxDumpBytes and the count limits.
package broker

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors the readers wrap (test with errors.Is).
var (
	// ErrDamaged: the kfake data directory is damaged: a file is not
	// what kfake writes, is cut short, fails a checksum or disagrees
	// with another (kfake itself would drop a damaged tail silently and
	// serve a shorter log).
	ErrDamaged = errors.New("broker data damaged")
	// ErrLimit: the kfake data directory exceeds one of the reader's
	// limits (MaxTopics, MaxPartitions, MaxFileBytes, ...), or a dump
	// one of MaxDumpBytes and the count limits.
	ErrLimit = errors.New("broker data beyond a reader limit")
	// ErrNotDataDir: the directory is not a kfake data directory.
	ErrNotDataDir = errors.New("not a kfake data directory")
	// ErrTruncatedDump: a dump file ends before its trailer, or its
	// trailer's counts disagree with its lines.
	ErrTruncatedDump = errors.New("broker dump cut short")
	// ErrBadDump: a dump line is not valid, or the file is of another
	// format or version.
	ErrBadDump = errors.New("bad broker dump")
	// ErrIncomplete: a partition could not be read up to its end offset,
	// or a topic asked for by name does not exist.
	ErrIncomplete = errors.New("broker log incomplete")
)

// Header is one record header. A nil Value is a null header value.
type Header struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Record is one record as the broker stored it. A nil Key (or Value) is a
// null key (or value), distinct from an empty one.
type Record struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Key       []byte   `json:"key"`
	Value     []byte   `json:"value"`
	Headers   []Header `json:"headers,omitempty"`
	// Timestamp has Kafka's millisecond precision, in UTC.
	Timestamp time.Time `json:"timestamp"`
}

// Header returns the value of the first header named key.
func (r Record) Header(key string) ([]byte, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value, true
		}
	}
	return nil, false
}

// Partition is one partition's log.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Start is the log start offset (the first offset still kept) and End
	// the high watermark (the offset the next record would get): the
	// partition holds [Start, End).
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Records holds the data records, by offset.
	Records []Record `json:"records"`
	// ControlOffsets are offsets in [Start, End) that hold transaction
	// markers rather than data records (none unless producers use
	// transactions).
	ControlOffsets []int64 `json:"control_offsets,omitempty"`
	// batches hold the records of a Log of OpenDataFS, still encoded
	// (Records is empty), and count how many there are.
	batches []batch
	count   int
}

// Count is the number of data records of the partition: len(Records),
// or, in a Log of OpenDataFS, the records EachRecord would give.
func (p *Partition) Count() int {
	if p.batches != nil {
		return p.count
	}
	return len(p.Records)
}

// Log is what the broker kept of the topics and groups read.
type Log struct {
	// Topics maps a topic to its partitions, the slice index being the
	// partition number.
	Topics map[string][]Partition `json:"topics"`
	// Groups maps group -> topic -> partition -> committed offset (the
	// offset of the next record the group will read), for the topics read.
	Groups map[string]map[string]map[int32]int64 `json:"groups"`
	// lazy: the partitions' records are in their batches, not Records
	// (OpenDataFS); read the topics whose records EachRecord gave.
	lazy bool
	read map[string]bool
}

// EachRecord calls fn with every data record of topic, by partition and
// offset, and stops at the first error fn returns. For a Log of
// OpenDataFS it decodes them one at a time from the checked batches
// (their Records are empty): the record fn gets, its key, value and
// headers, are valid only until the records of the next stored batch
// are decoded (EachBatch), and a topic's records are given once, its
// batches let go as they are read (a second call for the topic is
// refused with ErrIncomplete). A record that does not decode (which
// OpenDataFS checked already) is refused with ErrDamaged or ErrLimit.
func (l *Log) EachRecord(topic string, fn func(*Record) error) error {
	return l.each(topic, fn, nil)
}

// EachBatch is EachRecord a slice of records at a time: for a Log of
// OpenDataFS, the data records of one stored batch, decoded, which with
// their keys, values and headers are valid only during the call; for
// another, at most eachBatchMax records of a partition's. A reader that
// looks records up elsewhere can read a batch's keys first, and then
// look them all up at once.
func (l *Log) EachBatch(topic string, fn func([]Record) error) error {
	var recs []Record
	return l.each(topic, func(r *Record) error {
		recs = append(recs, *r)
		if len(recs) == eachBatchMax && !l.lazy {
			return give(&recs, fn)
		}
		return nil
	}, func() error { return give(&recs, fn) })
}

// eachBatchMax is the most records EachBatch gives a call of a Log not of
// OpenDataFS (whose records are held already).
const eachBatchMax = 1024

// give hands recs to fn, if any, and empties it.
func give(recs *[]Record, fn func([]Record) error) error {
	if len(*recs) == 0 {
		return nil
	}
	err := fn(*recs)
	clear(*recs) // what they refer to is let go with the batch
	*recs = (*recs)[:0]
	return err
}

// each is EachRecord, calling done (when set) after each stored batch of
// a Log of OpenDataFS, or each partition of another.
func (l *Log) each(topic string, fn func(*Record) error, done func() error) error {
	parts := l.Topics[topic]
	if !l.lazy {
		for i := range parts {
			for j := range parts[i].Records {
				if err := fn(&parts[i].Records[j]); err != nil {
					return err
				}
			}
			if done != nil {
				if err := done(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if l.read[topic] {
		return fmt.Errorf("%w: the records of %s were read already (a log of OpenDataFS gives them once)", ErrIncomplete, topic)
	}
	if l.read == nil {
		l.read = map[string]bool{}
	}
	l.read[topic] = true
	hs := headerSlab{reuse: true}
	var rec kmsg.Record
	var headers atomic.Int64
	for i := range parts {
		err := parts[i].each(parts[i].batches, &rec, &hs, &headers, nil, fn, done)
		parts[i].batches = []batch{} // read: the segments' bytes can go (Count stays)
		if err != nil {
			return err
		}
	}
	return nil
}

// Record returns the record at (topic, partition, offset).
func (l *Log) Record(topic string, partition int32, offset int64) (Record, bool) {
	p, ok := l.Partition(topic, partition)
	if !ok {
		return Record{}, false
	}
	i := sort.Search(len(p.Records), func(i int) bool { return p.Records[i].Offset >= offset })
	if i < len(p.Records) && p.Records[i].Offset == offset {
		return p.Records[i], true
	}
	return Record{}, false
}

// Partition returns one partition's log.
func (l *Log) Partition(topic string, partition int32) (Partition, bool) {
	ps := l.Topics[topic]
	if partition < 0 || int(partition) >= len(ps) {
		return Partition{}, false
	}
	return ps[partition], true
}

// Committed returns a group's committed offset for a partition.
func (l *Log) Committed(group, topic string, partition int32) (int64, bool) {
	o, ok := l.Groups[group][topic][partition]
	return o, ok
}

// TopicNames returns the topics, sorted.
func (l *Log) TopicNames() []string {
	out := make([]string, 0, len(l.Topics))
	for t := range l.Topics {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Selection says which topics and groups to read.
type Selection struct {
	// Topics are topics by exact name; a missing one is an error.
	Topics []string
	// Prefix adds every topic whose name starts with it (a run's topics
	// are ofa.<run id>.<scenario>). With neither Topics nor Prefix, every
	// non-internal topic is read.
	Prefix string
	// Groups are the consumer groups whose offsets to read; empty: every
	// group the cluster lists. Only offsets of the selected topics are kept.
	Groups []string
}
