package broker

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Limits of the data directory reader (ReadDataFS, ReadDataDir). A run of
// the default suite leaves 18 topics of 1 to 3 partitions, one segment
// each, about 100 KB in all, no file over 8 KB (evidence/example); each
// limit is far above that and bounds what a hostile directory can cost in
// memory and time. A directory over a limit is refused with ErrLimit.
const (
	// MaxTopics bounds the topics topics.json lists.
	MaxTopics = 1000
	// MaxPartitions bounds the partitions of all topics together.
	MaxPartitions = 10_000
	// MaxSegments bounds the segment files of one partition.
	MaxSegments = 1000
	// MaxFiles bounds the files of the whole directory.
	MaxFiles = 100_000
	// MaxFileBytes bounds one file (a segment, groups.log, ...).
	MaxFileBytes = 64 << 20
	// MaxMetadataBytes bounds one JSON file (topics.json, a snapshot).
	MaxMetadataBytes = 4 << 20
	// MaxDataBytes bounds all files together: the reader holds them in
	// memory, and so does the broker that serves the copy.
	MaxDataBytes = 256 << 20
	// MaxBatchBytes bounds one record batch's records once decompressed
	// (Kafka's default message size limit is 1 MiB).
	MaxBatchBytes = 16 << 20
	// MaxDecodedBytes bounds the records of all batches once
	// decompressed: what the Log read from the directory holds.
	MaxDecodedBytes = 512 << 20
	// MaxLogEntries bounds the entries of groups.log and pids.log.
	MaxLogEntries = 1 << 20
	// MaxGroups bounds the consumer groups groups.log names.
	MaxGroups = 10_000
)

// The files kfake writes at the top of its data directory (persist.go,
// saveToDisk and saveSessionState), and whether the copy it loads gets
// them. The reader needs the topics, their partitions and the groups'
// committed offsets; the others configure a live broker (ACLs, SASL users,
// quotas, broker configs, producer ids and sequence windows, members'
// sessions). Those are checked (size, framing, JSON) like the rest but
// withheld from kfake, so that none of their bytes reaches its code.
var topFiles = map[string]bool{
	"meta.json":           true,
	"topics.json":         true,
	"groups.log":          true,
	"pids.log":            false,
	"acls.json":           false,
	"sasl.json":           false,
	"quotas.json":         false,
	"broker_configs.json": false,
	"seq_windows.json":    false,
	"session_state.json":  false,
}

// legalTopic is Kafka's rule for topic names (kafka.common.internals.Topic),
// with "." and ".." refused apart. A legal name is also its own
// url.PathEscape, so kfake's partition directory is <name>-<n>.
var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

func checkTopicName(t string) error {
	if !legalTopic.MatchString(t) || t == "." || t == ".." {
		return fmt.Errorf("topic name %q is not a legal Kafka topic name", t)
	}
	return nil
}

// maxGroupName bounds a consumer group name; Kafka allows any string.
const maxGroupName = 1024

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// Mirrors of kfake's persisted types (persist.go, currentPersistVersion
// 1), decoded strictly. The copy kfake loads gets these re-encoded, so it
// sees no field that was not checked.
type (
	diskMeta struct {
		Version   int    `json:"version"`
		ClusterID string `json:"cluster_id"`
	}
	diskTopics struct {
		Version int         `json:"version"`
		Topics  []diskTopic `json:"topics"`
	}
	diskTopic struct {
		Name       string `json:"name"`
		ID         string `json:"id"`
		Partitions int    `json:"partitions"`
		Replicas   int    `json:"replicas"`
		// Configs are checked for size but not given to kfake: topic
		// configs steer retention and compaction, which must not run
		// on the evidence while it is read.
		Configs map[string]string `json:"configs,omitempty"`
	}
	diskSnapshot struct {
		Version          int              `json:"version"`
		HighWatermark    int64            `json:"high_watermark"`
		LastStableOffset int64            `json:"last_stable_offset"`
		LogStartOffset   int64            `json:"log_start_offset"`
		Epoch            int32            `json:"epoch"`
		LeaderNode       int32            `json:"leader_node,omitempty"`
		MaxTimestamp     int64            `json:"max_timestamp"`
		CreatedAt        time.Time        `json:"created_at"`
		AbortedTxns      []diskAbortedTxn `json:"aborted_txns,omitempty"`
		Segments         []diskSegment    `json:"segments"`
	}
	diskAbortedTxn struct {
		ProducerID  int64 `json:"producer_id"`
		FirstOffset int64 `json:"first_offset"`
		LastOffset  int64 `json:"last_offset"`
	}
	diskSegment struct {
		BaseOffset int64 `json:"base_offset"`
		Size       int64 `json:"size"`
		MinEpoch   int32 `json:"min_epoch,omitempty"`
		MaxEpoch   int32 `json:"max_epoch,omitempty"`
	}
	diskGroupEntry struct {
		Type       string  `json:"type"`
		Group      string  `json:"g"`
		Topic      string  `json:"t,omitempty"`
		Part       int32   `json:"p,omitempty"`
		Offset     int64   `json:"o,omitempty"`
		Epoch      int32   `json:"e,omitempty"`
		Metadata   *string `json:"m,omitempty"`
		LastCommit *int64  `json:"lc,omitempty"`
		GroupType  string  `json:"typ,omitempty"`
		ProtoType  string  `json:"pt,omitempty"`
		Protocol   string  `json:"pr,omitempty"`
		Generation int32   `json:"gen,omitempty"`
		Assignor   string  `json:"assignor,omitempty"`
		GroupEpoch int32   `json:"epoch848,omitempty"`
		InstanceID string  `json:"instance,omitempty"`
		MemberID   string  `json:"member,omitempty"`
	}
)

// dataPlan is a checked data directory: the files of the copy kfake will
// load (slash paths, in creation order, parents first) and each
// partition's snapshot, to hold the log read against.
type dataPlan struct {
	dirs  []string
	files []planFile
	snaps map[string][]diskSnapshot
	size  int64 // bytes of the files read
}

type planFile struct {
	name string
	data []byte
}

// checker reads fsys within the limits and says which file it is at, so
// that a refusal (or a recovered panic) names it.
type checker struct {
	ctx     context.Context
	fsys    fs.FS
	at      string
	read    int64
	nfiles  int
	decoded int64
}

func damaged(name, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrDamaged, name, fmt.Sprintf(format, args...))
}

func limited(name, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrLimit, name, fmt.Sprintf(format, args...))
}

// readFile reads one regular file of at most max bytes. The size is
// checked before reading (Stat) and while reading (a file that grows is
// refused too), so a declared size never drives an allocation beyond max.
func (c *checker) readFile(name string, max int64) ([]byte, error) {
	c.at = name
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	c.nfiles++
	if c.nfiles > MaxFiles {
		return nil, limited(name, "more than %d files", MaxFiles)
	}
	f, err := c.fsys.Open(name)
	if err != nil {
		return nil, damaged(name, "open: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, damaged(name, "stat: %v", err)
	}
	if !st.Mode().IsRegular() {
		return nil, damaged(name, "not a regular file (%v)", st.Mode().Type())
	}
	if st.Size() > max {
		return nil, limited(name, "%d bytes, more than the %d allowed", st.Size(), max)
	}
	if c.read+st.Size() > MaxDataBytes {
		return nil, limited(name, "the directory holds more than %d bytes", MaxDataBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, st.Size()+1))
	if err != nil {
		return nil, damaged(name, "read: %v", err)
	}
	if int64(len(b)) != st.Size() {
		return nil, damaged(name, "changed size while read (%d bytes, stat said %d)", len(b), st.Size())
	}
	c.read += int64(len(b))
	return b, nil
}

// readDir lists a directory, refusing more than max entries and any entry
// that is neither a regular file nor a directory.
func (c *checker) readDir(name string, max int) ([]fs.DirEntry, error) {
	c.at = name
	f, err := c.fsys.Open(name)
	if err != nil {
		return nil, damaged(name, "open directory: %v", err)
	}
	defer f.Close()
	var ents []fs.DirEntry
	if rd, ok := f.(fs.ReadDirFile); ok {
		for {
			batch, err := rd.ReadDir(256)
			ents = append(ents, batch...)
			if len(ents) > max {
				return nil, limited(name, "more than %d entries", max)
			}
			if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
				break
			}
			if err != nil {
				return nil, damaged(name, "list: %v", err)
			}
		}
	} else if ents, err = fs.ReadDir(c.fsys, name); err != nil {
		return nil, damaged(name, "list: %v", err)
	} else if len(ents) > max {
		return nil, limited(name, "more than %d entries", max)
	}
	for _, e := range ents {
		if t := e.Type(); t != 0 && t != fs.ModeDir {
			return nil, damaged(path.Join(name, e.Name()), "not a regular file or directory (%v)", t)
		}
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// decodeStrict decodes one JSON value, refusing unknown fields and
// anything after the value.
func decodeStrict(name string, b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return damaged(name, "%v", err)
	}
	if dec.More() {
		return damaged(name, "data after the JSON value")
	}
	return nil
}

// planDataFS checks a kfake data directory held by fsys against the layout
// kfake writes and the limits above, and returns the copy to give kfake.
// Nothing is trusted: every path must be one kfake writes, every count is
// checked against the limits before anything is sized from it, and every
// segment is parsed batch by batch (CRC, offsets, records), so that kfake
// loads the copy without a repair, a warning or a panic in its own
// goroutines.
func planDataFS(ctx context.Context, fsys fs.FS) (p *dataPlan, err error) {
	c := &checker{ctx: ctx, fsys: fsys}
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, damaged(c.at, "panic while checking: %v", r)
		}
	}()
	return c.plan()
}

func (c *checker) plan() (*dataPlan, error) {
	p := &dataPlan{snaps: map[string][]diskSnapshot{}}
	top, err := c.readDir(".", len(topFiles)+1)
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	hasParts := false
	for _, e := range top {
		switch load, known := topFiles[e.Name()]; {
		case e.Name() == "partitions" && e.IsDir():
			hasParts = true
		case known && !e.IsDir():
			present[e.Name()] = load
		default:
			return nil, damaged(e.Name(), "not a file kfake writes at the top of its data directory")
		}
	}
	if _, ok := present["meta.json"]; !ok {
		return nil, fmt.Errorf("%w: no meta.json", ErrNotDataDir)
	}
	if _, ok := present["topics.json"]; !ok {
		return nil, damaged("topics.json", "missing (kfake writes it whenever it closes)")
	}

	var meta diskMeta
	b, err := c.readFile("meta.json", MaxMetadataBytes)
	if err != nil {
		return nil, err
	}
	if err := decodeStrict("meta.json", b, &meta); err != nil {
		return nil, err
	}
	if meta.Version != 1 || len(meta.ClusterID) > 255 {
		return nil, damaged("meta.json", "version %d (want 1) or a cluster id of %d bytes", meta.Version, len(meta.ClusterID))
	}
	p.add("meta.json", mustJSON(meta))

	topics, err := c.checkTopics()
	if err != nil {
		return nil, err
	}
	clean := diskTopics{Version: 1, Topics: []diskTopic{}}
	for _, t := range topics {
		t.Configs = nil
		clean.Topics = append(clean.Topics, t)
	}
	p.add("topics.json", mustJSON(clean))

	for _, name := range []string{"groups.log", "pids.log"} {
		if _, ok := present[name]; !ok {
			continue
		}
		b, err := c.readFile(name, MaxFileBytes)
		if err != nil {
			return nil, err
		}
		if err := checkEntryLog(name, b, name == "groups.log"); err != nil {
			return nil, err
		}
		if present[name] {
			p.add(name, b)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(present)) {
		if present[name] || !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := c.readFile(name, MaxMetadataBytes)
		if err != nil {
			return nil, err
		}
		if !json.Valid(b) {
			return nil, damaged(name, "not valid JSON")
		}
	}

	if err := c.checkPartitions(p, topics, hasParts); err != nil {
		return nil, err
	}
	p.size = c.read
	return p, nil
}

func (p *dataPlan) add(name string, data []byte) {
	p.files = append(p.files, planFile{name, data})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err)) // plain structs of checked values: cannot fail
	}
	return b
}

func (c *checker) checkTopics() ([]diskTopic, error) {
	const name = "topics.json"
	b, err := c.readFile(name, MaxMetadataBytes)
	if err != nil {
		return nil, err
	}
	var pt diskTopics
	if err := decodeStrict(name, b, &pt); err != nil {
		return nil, err
	}
	if pt.Version != 1 {
		return nil, damaged(name, "version %d, want 1", pt.Version)
	}
	if len(pt.Topics) > MaxTopics {
		return nil, limited(name, "%d topics, more than %d", len(pt.Topics), MaxTopics)
	}
	names, norms, ids := map[string]bool{}, map[string]bool{}, map[string]bool{}
	total := 0
	for _, t := range pt.Topics {
		if err := checkTopicName(t.Name); err != nil {
			return nil, damaged(name, "%v", err)
		}
		norm := strings.ReplaceAll(t.Name, ".", "_") // Kafka's collision rule, which kfake keeps
		if names[t.Name] || norms[norm] {
			return nil, damaged(name, "topic %s listed twice or colliding with another", t.Name)
		}
		names[t.Name], norms[norm] = true, true
		id, err := base64.StdEncoding.DecodeString(t.ID)
		if err != nil || len(id) != 16 || ids[t.ID] {
			return nil, damaged(name, "topic %s: id %q is not a unique 16-byte base64 id", t.Name, t.ID)
		}
		ids[t.ID] = true
		if t.Partitions < 1 || t.Partitions > MaxPartitions-total {
			if t.Partitions < 1 {
				return nil, damaged(name, "topic %s has %d partitions", t.Name, t.Partitions)
			}
			return nil, limited(name, "topic %s: %d partitions, more than %d in all", t.Name, t.Partitions, MaxPartitions)
		}
		total += t.Partitions
		if t.Replicas < -1 || t.Replicas > 64 {
			return nil, damaged(name, "topic %s: %d replicas", t.Name, t.Replicas)
		}
		if len(t.Configs) > 256 {
			return nil, limited(name, "topic %s: %d configs", t.Name, len(t.Configs))
		}
	}
	return pt.Topics, nil
}

// checkPartitions checks partitions/: one directory per partition of
// topics.json and nothing else, each with its snapshot and segments.
func (c *checker) checkPartitions(p *dataPlan, topics []diskTopic, hasParts bool) error {
	want := map[string]bool{}
	total := 0
	for _, t := range topics {
		total += t.Partitions
		p.snaps[t.Name] = make([]diskSnapshot, t.Partitions) // bounded by MaxPartitions above
		for n := range t.Partitions {
			want[fmt.Sprintf("%s-%d", t.Name, n)] = true
		}
	}
	if total == 0 && !hasParts {
		return nil
	}
	if !hasParts {
		return damaged("partitions", "missing, with %d partitions listed in topics.json", total)
	}
	ents, err := c.readDir("partitions", MaxPartitions)
	if err != nil {
		return err
	}
	p.dirs = append(p.dirs, "partitions")
	for _, e := range ents {
		if !e.IsDir() || !want[e.Name()] {
			return damaged(path.Join("partitions", e.Name()), "not the directory of a partition topics.json lists")
		}
	}
	if len(ents) != total {
		for d := range want {
			if !slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return e.Name() == d }) {
				return damaged(path.Join("partitions", d), "missing (kfake writes every partition's snapshot when it closes)")
			}
		}
	}
	for _, t := range topics {
		for n := range t.Partitions {
			dir := path.Join("partitions", fmt.Sprintf("%s-%d", t.Name, n))
			snap, err := c.checkPartition(p, dir)
			if err != nil {
				return err
			}
			p.snaps[t.Name][n] = snap
		}
	}
	return nil
}

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
		if err := c.checkRecords(name, pos, attrs&attrCodecMask, b[batchHeader:], n); err != nil {
			return s, err
		}
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
// decoded.
func (c *checker) checkRecords(name string, pos int, codec uint16, recs []byte, n int64) error {
	var size int64
	switch codec {
	case codecNone:
		size = int64(len(recs))
	case codecSnappy:
		l, err := snappyDecodedLen(recs)
		if err != nil {
			return damaged(name, "batch at %d: %v", pos, err)
		}
		size = l
	default:
		return damaged(name, "batch at %d: compression codec %d (the reader accepts none and snappy)", pos, codec)
	}
	if size > MaxBatchBytes {
		return limited(name, "batch at %d decompresses to %d bytes, more than %d", pos, size, MaxBatchBytes)
	}
	if c.decoded+size > MaxDecodedBytes {
		return limited(name, "the records decompress to more than %d bytes", MaxDecodedBytes)
	}
	c.decoded += size
	if codec == codecSnappy {
		out, err := kgo.DefaultDecompressor().Decompress(recs, kgo.CodecSnappy)
		if err != nil || int64(len(out)) != size {
			return damaged(name, "batch at %d: snappy: %d bytes decoded of %d declared: %v", pos, len(out), size, err)
		}
		recs = out
	}
	var count int64
	for len(recs) > 0 {
		l, k := binary.Varint(recs)
		if k <= 0 || l < 0 || l > int64(len(recs)-k) {
			return damaged(name, "batch at %d: record %d is cut or has a bad length", pos, count)
		}
		recs = recs[k+int(l):]
		count++
	}
	if count != n {
		return damaged(name, "batch at %d declares %d records and holds %d", pos, n, count)
	}
	return nil
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
const entryHeader = 10

// checkEntryLog checks the framing of an append log to its last byte
// (kfake would drop a damaged tail with only a warning) and, for
// groups.log, that each entry is a group entry kfake knows.
func checkEntryLog(name string, raw []byte, groups bool) error {
	names := map[string]bool{}
	n := 0
	for pos := 0; pos < len(raw); n++ {
		if n >= MaxLogEntries {
			return limited(name, "more than %d entries", MaxLogEntries)
		}
		if len(raw)-pos < entryHeader {
			return damaged(name, "%d bytes at %d are too few for an entry", len(raw)-pos, pos)
		}
		length := int64(binary.LittleEndian.Uint32(raw[pos:]))
		if length < 2 || length > int64(len(raw)-pos-8) {
			return damaged(name, "entry at %d declares %d bytes; %d follow", pos, length, len(raw)-pos-8)
		}
		body := raw[pos+8 : pos+8+int(length)]
		if crc32.Checksum(body, crc32c) != binary.LittleEndian.Uint32(raw[pos+4:]) {
			return damaged(name, "entry at %d fails its CRC", pos)
		}
		if v := binary.LittleEndian.Uint16(body); v != 1 {
			return damaged(name, "entry at %d has version %d, want 1", pos, v)
		}
		if groups {
			var e diskGroupEntry
			if err := decodeStrict(name, body[2:], &e); err != nil {
				return fmt.Errorf("entry at %d: %w", pos, err)
			}
			if err := checkGroupEntry(e); err != nil {
				return damaged(name, "entry at %d: %v", pos, err)
			}
			if !names[e.Group] && len(names) >= MaxGroups {
				return limited(name, "more than %d groups", MaxGroups)
			}
			names[e.Group] = true
		} else if !json.Valid(body[2:]) {
			return damaged(name, "entry at %d is not JSON", pos)
		}
		pos += 8 + int(length)
	}
	return nil
}

func checkGroupEntry(e diskGroupEntry) error {
	if e.Group == "" || len(e.Group) > maxGroupName {
		return fmt.Errorf("group name of %d bytes", len(e.Group))
	}
	switch e.Type {
	case "commit", "delete":
		if err := checkTopicName(e.Topic); err != nil {
			return err
		}
		if e.Part < 0 || e.Part >= MaxPartitions {
			return fmt.Errorf("partition %d", e.Part)
		}
	case "meta":
		if e.GroupType != "" && e.GroupType != "classic" {
			return fmt.Errorf("group type %q", e.GroupType)
		}
	case "meta848", "static":
	default:
		return fmt.Errorf("unknown entry type %q", e.Type)
	}
	return nil
}
