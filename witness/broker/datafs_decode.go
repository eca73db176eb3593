package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batch is one record batch of a segment as checkSegment checked it:
// its offsets, attributes and timestamps from the header, and its
// records' bytes, decompressed, holding exactly n framed records.
type batch struct {
	file           string // the segment, for a refusal's message
	pos            int    // the batch's position in it
	first, last    int64  // FirstOffset and FirstOffset+LastOffsetDelta
	attrs          uint16
	firstTS, maxTS int64
	n              int
	recs           []byte
	// codec and raw are the records as the segment holds them: a Log of
	// OpenDataFS keeps those of a compressed batch rather than recs, and
	// each decompresses them again.
	codec uint16
	raw   []byte
}

// Batch attribute bits (Kafka's v2 message format).
const (
	attrLogAppendTime = 0x08
	attrControl       = 0x20
)

// decodePlan builds the Log of the topics and groups sel selects from a
// checked plan, the way reading it back through kfake with a consumer
// did (Read): every partition holds [snapshot's log start, high
// watermark), data records by offset, the offsets of control records
// apart, uncommitted transactions' records included; a group's offsets
// are its replayed commits on the selected topics (a negative offset is
// none), a group without one left out unless sel names it. The records
// are decoded with kmsg, as a client does, and more strictly: a record
// that does not parse to its framed length, or whose offset is outside
// its batch or not after the one before, is refused with ErrDamaged
// (a client would stop at it and silently serve a shorter log). Keys,
// values and header values alias the plan's decompressed batches. With
// lazy (OpenDataFS), the records are checked but not kept (open).
func decodePlan(ctx context.Context, p *dataPlan, sel Selection, lazy bool) (*Log, error) {
	topics, err := p.selectTopics(sel)
	if err != nil {
		return nil, err
	}
	log := &Log{Topics: map[string][]Partition{}, Groups: p.groups(sel, topics), lazy: lazy}
	for _, t := range topics {
		log.Topics[t] = make([]Partition, len(p.snaps[t]))
	}
	var headers atomic.Int64
	if decodeAtOnce(ctx, p, topics, log, &headers) {
		return log, nil
	}
	hs := headerSlab{reuse: lazy}
	var rec kmsg.Record
	for _, t := range topics {
		for n := range p.snaps[t] {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			part, err := readPartition(p, t, n, &rec, &hs, &headers, lazy)
			if err != nil {
				return nil, err
			}
			log.Topics[t][n] = part
		}
	}
	return log, nil
}

// readPartition decodes (lazy: opens) partition n of topic t.
func readPartition(p *dataPlan, t string, n int, rec *kmsg.Record, hs *headerSlab, headers *atomic.Int64, lazy bool) (Partition, error) {
	snap := p.snaps[t][n]
	part := Partition{Topic: t, Partition: int32(n), Start: snap.LogStartOffset, End: snap.HighWatermark}
	read := part.decode
	if lazy {
		read = part.open
	}
	err := read(p.batches[t][n], rec, hs, headers)
	return part, err
}

// selectTopics is Read's selection over the topics of topics.json.
func (p *dataPlan) selectTopics(sel Selection) ([]string, error) {
	var out []string
	for _, t := range p.topics {
		if (len(sel.Topics) == 0 && sel.Prefix == "") || (sel.Prefix != "" && strings.HasPrefix(t.Name, sel.Prefix)) ||
			slices.Contains(sel.Topics, t.Name) {
			out = append(out, t.Name)
		}
	}
	for _, t := range sel.Topics {
		if !slices.ContainsFunc(p.topics, func(d diskTopic) bool { return d.Name == t }) {
			return nil, fmt.Errorf("%w: topic %s does not exist", ErrIncomplete, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// groups is Read's readGroups over the replayed commits.
func (p *dataPlan) groups(sel Selection, topics []string) map[string]map[string]map[int32]int64 {
	names := sel.Groups
	if len(names) == 0 {
		for g := range p.commits {
			names = append(names, g)
		}
	}
	out := map[string]map[string]map[int32]int64{}
	for _, g := range names {
		m := map[string]map[int32]int64{}
		for t, ps := range p.commits[g] {
			if !slices.Contains(topics, t) {
				continue
			}
			for n, o := range ps {
				if o < 0 {
					continue
				}
				if m[t] == nil {
					m[t] = map[int32]int64{}
				}
				m[t][n] = o
			}
		}
		if len(m) > 0 || len(sel.Groups) > 0 {
			out[g] = m
		}
	}
	return out
}

// decode files the records of bs that fall in [part.Start, part.End).
//
// headers counts the headers decoded so far, against MaxHeaders; a
// record's count is read (headerCount) before kmsg sizes an array by it.
func (part *Partition) decode(bs []batch, rec *kmsg.Record, hs *headerSlab, headers *atomic.Int64) error {
	n := 0
	for _, b := range bs {
		if b.attrs&attrControl == 0 {
			n += b.n
		}
	}
	part.Records = make([]Record, 0, n)
	return part.each(bs, rec, hs, headers, &part.ControlOffsets, func(r *Record) error {
		part.Records = append(part.Records, *r)
		return nil
	}, nil)
}

// each decodes the records of bs that fall in [part.Start, part.End)
// and hands each data record to fn (its headers from hs: see
// headerSlab.reuse), and files the offsets of control records in
// controls unless it is nil.
// A record that does not parse, has an offset outside its batch or not
// after the one before, or declares more headers than it has bytes for
// or than MaxHeaders in all is refused (damaged, limited).
func (part *Partition) each(bs []batch, rec *kmsg.Record, hs *headerSlab, headers *atomic.Int64, controls *[]int64, fn func(*Record) error, done func() error) error {
	prev := int64(-1)
	var r Record
	var again decompressor
	for _, b := range bs {
		// The batch's headers are counted here and added to headers
		// after it: partitions decoded at once share headers, which a
		// count a record would make them wait on. seen is what the
		// others had counted (decodeAtOnce holds the sum to the limit
		// after).
		seen, counted := headers.Load(), int64(0)
		if hs.reuse {
			hs.block = hs.block[:0] // the last batch's records are done with
		}
		recs := b.recs
		if recs == nil && b.codec != codecNone {
			var err error
			if recs, err = again.decompress(b.raw); err != nil {
				return damaged(b.file, "batch at %d: snappy: %v", b.pos, err)
			}
		}
		for i := range b.n {
			// checkRecords framed every record: the length is in bounds.
			l, k := binary.Varint(recs)
			one := recs[:k+int(l)]
			recs = recs[k+int(l):]
			nh, left, ok := headerCount(one)
			nh = max(nh, 0) // kmsg reads a negative count as no header
			switch {
			case !ok:
				return damaged(b.file, "batch at %d: record %d does not parse to its length", b.pos, i)
			case nh > int64(left)/2 || seen+counted+nh > maxHeaders:
				return limited(b.file, "batch at %d: record %d declares %d headers (%d bytes left for them, at least 2 each; at most %d in all)",
					b.pos, i, nh, left, maxHeaders)
			}
			counted += nh
			if err := rec.UnsafeReadFrom(one); err != nil {
				return damaged(b.file, "batch at %d: record %d does not parse to its length", b.pos, i)
			}
			off := b.first + int64(rec.OffsetDelta)
			if rec.OffsetDelta < 0 || off > b.last || off <= prev {
				return damaged(b.file, "batch at %d: record %d has offset %d, outside [%d, %d] or not after %d",
					b.pos, i, off, b.first, b.last, prev)
			}
			prev = off
			if off < part.Start || off >= part.End {
				continue
			}
			if b.attrs&attrControl != 0 {
				if controls != nil {
					*controls = append(*controls, off)
				}
				continue
			}
			ts := b.firstTS + rec.TimestampDelta64
			if b.attrs&attrLogAppendTime != 0 {
				ts = b.maxTS
			}
			r = Record{Topic: part.Topic, Partition: part.Partition, Offset: off, Key: rec.Key, Value: rec.Value,
				Timestamp: time.UnixMilli(ts).UTC()}
			if len(rec.Headers) > 0 {
				at := hs.reserve(len(rec.Headers))
				for _, h := range rec.Headers {
					hs.push(h.Key, h.Value)
				}
				r.Headers = hs.since(at)
			}
			if err := fn(&r); err != nil {
				return err
			}
		}
		headers.Add(counted)
		if done != nil {
			if err := done(); err != nil {
				return err
			}
		}
	}
	return nil
}

// decompressor decompresses the batches each reads again (a Log of
// OpenDataFS) into one buffer, reused from batch to batch (kgo's
// decompressor takes it as a PoolDecompressBytes): what a record holds is
// valid only until the next batch, as EachRecord says.
type decompressor struct {
	buf []byte
	dec kgo.Decompressor
}

func (d *decompressor) decompress(raw []byte) ([]byte, error) {
	if d.dec == nil {
		d.dec = kgo.DefaultDecompressor(d)
	}
	out, err := d.dec.Decompress(raw, kgo.CodecSnappy)
	if cap(out) > cap(d.buf) {
		d.buf = out[:0]
	}
	return out, err
}

// GetDecompressBytes is the buffer, grown to what src's blocks declare
// (checkRecords checked that already, within MaxBatchBytes).
func (d *decompressor) GetDecompressBytes(src []byte, _ kgo.CompressionCodecType) []byte {
	if n, err := snappyDecodedLen(src); err == nil && int64(cap(d.buf)) < n && n <= MaxBatchBytes {
		d.buf = make([]byte, 0, n)
	}
	return d.buf[:0]
}

// PutDecompressBytes: the buffer is kept by the decompressor, not pooled.
func (*decompressor) PutDecompressBytes([]byte) {}

// open checks the records of bs as decode does, counting the data
// records of [part.Start, part.End) and filing the control offsets, but
// keeps none (OpenDataFS): the partition keeps bs, for EachRecord to
// decode again, one at a time, decompressing again what was compressed
// (the segments' bytes are held anyway: the decompressed ones are not
// kept twice).
func (part *Partition) open(bs []batch, rec *kmsg.Record, hs *headerSlab, headers *atomic.Int64) error {
	err := part.each(bs, rec, hs, headers, &part.ControlOffsets, func(*Record) error {
		part.count++
		return nil
	}, nil)
	part.batches = slices.Clone(bs)
	for i := range part.batches {
		if part.batches[i].codec != codecNone {
			part.batches[i].recs = nil
		}
	}
	return err
}

// headerCount reads the header count a framed record declares (v2:
// length, attributes, timestamp delta, offset delta, key, value, then
// the count), and how many bytes follow it, without decoding the rest;
// ok is false when the record ends or a field is malformed before the
// count.
func headerCount(rec []byte) (n int64, left int, ok bool) {
	varint := func() (int64, bool) {
		v, k := binary.Varint(rec)
		if k <= 0 {
			return 0, false
		}
		rec = rec[k:]
		return v, true
	}
	if _, ok := varint(); !ok || len(rec) < 1 { // length
		return 0, 0, false
	}
	rec = rec[1:] // attributes
	for range 2 { // timestamp delta, offset delta
		if _, ok := varint(); !ok {
			return 0, 0, false
		}
	}
	for range 2 { // key, value: a length (-1: null), then its bytes
		l, ok := varint()
		if !ok || l > int64(len(rec)) {
			return 0, 0, false
		}
		if l > 0 {
			rec = rec[l:]
		}
	}
	n, ok = varint()
	return n, len(rec), ok
}
