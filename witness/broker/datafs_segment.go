package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// segment is what checkSegment learns of one segment file.
type segment struct {
	base    int64
	size    int64
	batches int
	first   int64 // first offset of the first batch, -1 without batches
	next    int64 // one past the last offset of the last batch
}

func (c *checker) checkPartition(p *dataPlan, dir string) (diskSnapshot, error) {
	var snap diskSnapshot
	ents, err := c.readDir(dir, 2*MaxSegments+1)
	if err != nil {
		return snap, err
	}
	p.dirs = append(p.dirs, dir)
	dats, idxs := map[int64]bool{}, map[int64]bool{}
	hasSnap := false
	for _, e := range ents {
		name := e.Name()
		base, ext, ok := segmentName(name)
		switch {
		case e.IsDir():
			return snap, damaged(path.Join(dir, name), "a directory inside a partition directory")
		case name == "snapshot.json":
			hasSnap = true
		case ok && ext == ".dat":
			dats[base] = true
		case ok && ext == ".idx":
			idxs[base] = true
		default:
			return snap, damaged(path.Join(dir, name), "not a file kfake writes in a partition directory")
		}
	}
	if len(dats) > MaxSegments {
		return snap, limited(dir, "%d segments, more than %d", len(dats), MaxSegments)
	}
	for b := range idxs {
		if !dats[b] {
			return snap, damaged(path.Join(dir, strconv.FormatInt(b, 10)+".idx"), "an index without its segment")
		}
	}
	if !hasSnap {
		return snap, damaged(path.Join(dir, "snapshot.json"), "missing (the broker was not closed cleanly)")
	}
	b, err := c.readFile(path.Join(dir, "snapshot.json"), MaxMetadataBytes)
	if err != nil {
		return snap, err
	}
	if err := decodeStrict(path.Join(dir, "snapshot.json"), b, &snap); err != nil {
		return snap, err
	}

	bases := slices.Sorted(func(yield func(int64) bool) {
		for b := range dats {
			if !yield(b) {
				return
			}
		}
	})
	var segs []segment
	for _, base := range bases {
		s, err := c.checkSegment(p, dir, base, idxs[base])
		if err != nil {
			return snap, err
		}
		if len(segs) > 0 && s.base < segs[len(segs)-1].next {
			return snap, damaged(c.at, "segment %d begins before the previous one ends (%d)", s.base, segs[len(segs)-1].next)
		}
		segs = append(segs, s)
	}
	if err := checkSnapshot(path.Join(dir, "snapshot.json"), snap, segs); err != nil {
		return snap, err
	}
	p.add(path.Join(dir, "snapshot.json"), mustJSON(snap))
	return snap, nil
}

// segmentName parses "<base>.dat" or "<base>.idx", base in canonical
// decimal (the way kfake names them), so that one base has one name.
func segmentName(name string) (int64, string, bool) {
	ext := path.Ext(name)
	if ext != ".dat" && ext != ".idx" {
		return 0, "", false
	}
	base, err := strconv.ParseInt(strings.TrimSuffix(name, ext), 10, 64)
	if err != nil || base < 0 || strconv.FormatInt(base, 10)+ext != name {
		return 0, "", false
	}
	return base, ext, true
}

// checkSnapshot holds the snapshot to the segments present: kfake trusts
// its offsets when the segment list matches the files (and otherwise
// replays them, guessing), so both must agree exactly.
func checkSnapshot(name string, s diskSnapshot, segs []segment) error {
	if s.Version != 1 {
		return damaged(name, "version %d, want 1", s.Version)
	}
	if len(s.Segments) != len(segs) {
		return damaged(name, "lists %d segments; the directory holds %d", len(s.Segments), len(segs))
	}
	first, next := int64(-1), int64(-1)
	for i, ss := range s.Segments {
		if ss.BaseOffset != segs[i].base || ss.Size != segs[i].size {
			return damaged(name, "segment %d of %d bytes; the directory holds segment %d of %d bytes",
				ss.BaseOffset, ss.Size, segs[i].base, segs[i].size)
		}
		if segs[i].batches > 0 {
			if first < 0 {
				first = segs[i].first
			}
			next = segs[i].next
		}
	}
	hwm, lso, start := s.HighWatermark, s.LastStableOffset, s.LogStartOffset
	switch {
	case start < 0 || start > hwm || lso < start || lso > hwm:
		return damaged(name, "offsets out of order: log start %d, last stable %d, high watermark %d", start, lso, hwm)
	case first >= 0 && (hwm != next || start < first):
		return damaged(name, "high watermark %d and log start %d; the segments hold [%d, %d)", hwm, start, first, next)
	case first < 0 && hwm != start:
		return damaged(name, "high watermark %d and log start %d with no batch in the segments", hwm, start)
	case s.Epoch < 0:
		return damaged(name, "leader epoch %d", s.Epoch)
	}
	for i, a := range s.AbortedTxns {
		if a.FirstOffset < 0 || a.FirstOffset > a.LastOffset || a.LastOffset >= hwm ||
			(i > 0 && a.LastOffset < s.AbortedTxns[i-1].LastOffset) {
			return damaged(name, "aborted transaction %d: [%d, %d] out of order or outside the log", i, a.FirstOffset, a.LastOffset)
		}
	}
	return nil
}

// The RecordBatch header (Kafka's v2 message format): a batch is
// FirstOffset(8) Length(4) PartitionLeaderEpoch(4) Magic(1) CRC(4)
// Attributes(2) LastOffsetDelta(4) FirstTimestamp(8) MaxTimestamp(8)
// ProducerID(8) ProducerEpoch(2) FirstSequence(4) NumRecords(4), then the
// records; Length counts from PartitionLeaderEpoch on, the CRC (CRC-32C)
// from Attributes on.
const (
	batchHeader   = 61
	indexEntry    = 15 // kfake's .idx entry: version, checksum, epoch(4), max timestamp(8), flags
	codecNone     = 0
	codecSnappy   = 2
	attrCodecMask = 0x07
)

func (c *checker) checkSegment(p *dataPlan, dir string, base int64, hasIdx bool) (segment, error) {
	name := path.Join(dir, strconv.FormatInt(base, 10)+".dat")
	raw, err := c.readFile(name, MaxFileBytes)
	if err != nil {
		return segment{}, err
	}
	s := segment{base: base, size: int64(len(raw)), first: -1, next: base}
	for pos := 0; pos < len(raw); {
		if len(raw)-pos < batchHeader {
			return s, damaged(name, "%d bytes at %d are too few for a record batch", len(raw)-pos, pos)
		}
		h := raw[pos:]
		first := int64(binary.BigEndian.Uint64(h))
		length := int64(int32(binary.BigEndian.Uint32(h[8:])))
		if length < batchHeader-12 || length > int64(len(raw)-pos-12) {
			return s, damaged(name, "batch at %d declares %d bytes; %d follow", pos, length, len(raw)-pos-12)
		}
		b := raw[pos : pos+12+int(length)]
		if b[16] != 2 {
			return s, damaged(name, "batch at %d has magic %d, want 2", pos, b[16])
		}
		if crc := binary.BigEndian.Uint32(b[17:]); crc32.Checksum(b[21:], crc32c) != crc {
			return s, damaged(name, "batch at %d fails its CRC", pos)
		}
		attrs := binary.BigEndian.Uint16(b[21:])
		delta := int64(int32(binary.BigEndian.Uint32(b[23:])))
		n := int64(int32(binary.BigEndian.Uint32(b[57:])))
		if first < s.next || delta < 0 || first > math.MaxInt64-delta-1 || n < 0 || n > delta+1 {
			return s, damaged(name, "batch at %d: offsets [%d, +%d] with %d records, after offset %d", pos, first, delta, n, s.next)
		}
		recs, err := c.checkRecords(name, pos, attrs&attrCodecMask, b[batchHeader:], n)
		if err != nil {
			return s, err
		}
		c.cur = append(c.cur, batch{file: name, pos: pos, first: first, last: first + delta, attrs: attrs,
			firstTS: int64(binary.BigEndian.Uint64(b[27:])), maxTS: int64(binary.BigEndian.Uint64(b[35:])),
			n: int(n), recs: recs, codec: attrs & attrCodecMask, raw: b[batchHeader:]})
		if s.first < 0 {
			s.first = first
		}
		s.next = first + delta + 1
		s.batches++
		pos += len(b)
	}
	p.add(name, raw)
	if !hasIdx {
		if s.batches > 0 {
			return s, damaged(strings.TrimSuffix(name, ".dat")+".idx", "missing")
		}
		return s, nil
	}
	iname := strings.TrimSuffix(name, ".dat") + ".idx"
	idx, err := c.readFile(iname, MaxFileBytes)
	if err != nil {
		return s, err
	}
	if len(idx) != s.batches*indexEntry {
		return s, damaged(iname, "%d bytes for %d batches (%d each)", len(idx), s.batches, indexEntry)
	}
	for i := 0; i < len(idx); i += indexEntry {
		e := idx[i : i+indexEntry]
		if e[0] != 1 || byte(crc32.Checksum(e[2:], crc32c)) != e[1] {
			return s, damaged(iname, "entry %d: version %d or checksum wrong", i/indexEntry, e[0])
		}
	}
	p.add(iname, idx)
	return s, nil
}

// checkRecords decompresses a batch's records within the limits and
// counts them: the count must be what the batch declares. Only the codecs
// the run's producers write (none, snappy) are read; for snappy the
// decoded length each block declares is checked before anything is
// decoded. It returns the records' bytes, decompressed (nil for a
// compressed batch's when c.drop).
func (c *checker) checkRecords(name string, pos int, codec uint16, recs []byte, n int64) ([]byte, error) {
	var size int64
	switch codec {
	case codecNone:
		size = int64(len(recs))
	case codecSnappy:
		l, err := snappyDecodedLen(recs)
		if err != nil {
			return nil, damaged(name, "batch at %d: %v", pos, err)
		}
		size = l
	default:
		return nil, damaged(name, "batch at %d: compression codec %d (the reader accepts none and snappy)", pos, codec)
	}
	if size > MaxBatchBytes {
		return nil, limited(name, "batch at %d decompresses to %d bytes, more than %d", pos, size, MaxBatchBytes)
	}
	if c.spent.decoded.Add(size) > MaxDecodedBytes {
		return nil, limited(name, "the records decompress to more than %d bytes", MaxDecodedBytes)
	}
	if codec == codecSnappy {
		var out []byte
		var err error
		if c.drop {
			out, err = c.dec.decompress(recs)
		} else {
			out, err = kgo.DefaultDecompressor().Decompress(recs, kgo.CodecSnappy)
		}
		if err != nil || int64(len(out)) != size {
			return nil, damaged(name, "batch at %d: snappy: %d bytes decoded of %d declared: %v", pos, len(out), size, err)
		}
		recs = out
	}
	out := recs
	var count int64
	for len(recs) > 0 {
		l, k := binary.Varint(recs)
		if k <= 0 || l < 0 || l > int64(len(recs)-k) {
			return nil, damaged(name, "batch at %d: record %d is cut or has a bad length", pos, count)
		}
		recs = recs[k+int(l):]
		count++
	}
	if count != n {
		return nil, damaged(name, "batch at %d declares %d records and holds %d", pos, n, count)
	}
	if c.spent.records.Add(count) > MaxRecords {
		return nil, limited(name, "more than %d records", MaxRecords)
	}
	if c.drop && codec == codecSnappy {
		return nil, nil // dec's: open decompresses them again
	}
	return out, nil
}

// xerialMagic opens snappy in the xerial framing (Java's producer); a
// block is then a big-endian length and a raw snappy block.
var xerialMagic = []byte{130, 83, 78, 65, 80, 80, 89, 0}

// snappyDecodedLen sums the decoded lengths the snappy blocks of b declare
// (a raw block begins with its decoded length as a uvarint).
func snappyDecodedLen(b []byte) (int64, error) {
	blockLen := func(blk []byte) (int64, error) {
		l, k := binary.Uvarint(blk)
		if k <= 0 || l > math.MaxUint32 {
			return 0, errors.New("snappy block without a valid length")
		}
		return int64(l), nil
	}
	if len(b) <= 16 || !bytes.HasPrefix(b, xerialMagic) {
		return blockLen(b)
	}
	var total int64
	for rem := b[16:]; len(rem) > 0; {
		if len(rem) < 4 {
			return 0, errors.New("xerial framing cut short")
		}
		n := int64(binary.BigEndian.Uint32(rem))
		rem = rem[4:]
		if n > int64(len(rem)) {
			return 0, errors.New("xerial block longer than the batch")
		}
		l, err := blockLen(rem[:n])
		if err != nil {
			return 0, err
		}
		if total += l; total > MaxBatchBytes {
			return total, nil // over the limit: the caller refuses it
		}
		rem = rem[n:]
	}
	return total, nil
}

// entryHeader frames kfake's append logs (groups.log, pids.log): length(4)
// CRC-32C(4) version(2), little-endian; length counts version and data.
