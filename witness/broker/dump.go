package broker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DumpFormat and DumpVersion name the dump file format in its header line.
// A reader refuses another format or a newer version.
const (
	DumpFormat  = "orderflow-audit/broker-dump"
	DumpVersion = 1
)

// The dump is JSON Lines, one object per line, each with a "kind":
//
//	{"kind":"header","format":"orderflow-audit/broker-dump","version":1}
//	{"kind":"partition","topic":"t","partition":0,"start":0,"end":2,"control_offsets":[...]}
//	{"kind":"record","topic":"t","partition":0,"offset":0,"timestamp_ms":1700000000000,
//	 "key":"<base64>"|null,"value":"<base64>"|null,"headers":[{"key":"k","value":"<base64>"|null}]}
//	{"kind":"group_offset","group":"g","topic":"t","partition":0,"offset":2}
//	{"kind":"end","partitions":1,"records":2,"group_offsets":1}
//
// Topics are sorted by name and partitions by number; each partition line is
// followed by its records in offset order; group offsets come after all
// records, sorted by group, topic, partition; the "end" trailer counts the
// lines before it, so a file cut short is detected. Keys, values and header
// values are base64 (JSON's encoding of bytes), null for a null one.
type dumpLine struct {
	Kind string `json:"kind"`

	Format  string `json:"format,omitempty"`
	Version int    `json:"version,omitempty"`

	Group          string  `json:"group,omitempty"`
	Topic          string  `json:"topic,omitempty"`
	Partition      *int32  `json:"partition,omitempty"`
	Start          *int64  `json:"start,omitempty"`
	End            *int64  `json:"end,omitempty"`
	ControlOffsets []int64 `json:"control_offsets,omitempty"`
	Offset         *int64  `json:"offset,omitempty"`

	TimestampMS *int64   `json:"timestamp_ms,omitempty"`
	Key         []byte   `json:"key"`
	Value       []byte   `json:"value"`
	Headers     []Header `json:"headers,omitempty"`

	Partitions   *int `json:"partitions,omitempty"`
	Records      *int `json:"records,omitempty"`
	GroupOffsets *int `json:"group_offsets,omitempty"`
}

// The writer uses one struct per kind so that only a record line carries
// key and value (null included).
type (
	headerLine struct {
		Kind    string `json:"kind"`
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	partitionLine struct {
		Kind           string  `json:"kind"`
		Topic          string  `json:"topic"`
		Partition      int32   `json:"partition"`
		Start          int64   `json:"start"`
		End            int64   `json:"end"`
		ControlOffsets []int64 `json:"control_offsets,omitempty"`
	}
	recordLine struct {
		Kind        string   `json:"kind"`
		Topic       string   `json:"topic"`
		Partition   int32    `json:"partition"`
		Offset      int64    `json:"offset"`
		TimestampMS int64    `json:"timestamp_ms"`
		Key         []byte   `json:"key"`
		Value       []byte   `json:"value"`
		Headers     []Header `json:"headers,omitempty"`
	}
	groupLine struct {
		Kind      string `json:"kind"`
		Group     string `json:"group"`
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
	}
	endLine struct {
		Kind         string `json:"kind"`
		Partitions   int    `json:"partitions"`
		Records      int    `json:"records"`
		GroupOffsets int    `json:"group_offsets"`
	}
)

// WriteDump writes log in the dump format (see dumpLine) to w.
func WriteDump(w io.Writer, log *Log) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(headerLine{"header", DumpFormat, DumpVersion}); err != nil {
		return fmt.Errorf("write broker dump: %w", err)
	}
	var end = endLine{Kind: "end"}
	for _, t := range log.TopicNames() {
		for _, p := range log.Topics[t] {
			if err := enc.Encode(partitionLine{"partition", t, p.Partition, p.Start, p.End, p.ControlOffsets}); err != nil {
				return fmt.Errorf("write broker dump: %w", err)
			}
			end.Partitions++
			for _, r := range p.Records {
				l := recordLine{"record", r.Topic, r.Partition, r.Offset, r.Timestamp.UnixMilli(), r.Key, r.Value, r.Headers}
				if err := enc.Encode(l); err != nil {
					return fmt.Errorf("write broker dump: %w", err)
				}
				end.Records++
			}
		}
	}
	for _, g := range slices.Sorted(maps.Keys(log.Groups)) {
		for _, t := range slices.Sorted(maps.Keys(log.Groups[g])) {
			for _, p := range slices.Sorted(maps.Keys(log.Groups[g][t])) {
				if err := enc.Encode(groupLine{"group_offset", g, t, p, log.Groups[g][t][p]}); err != nil {
					return fmt.Errorf("write broker dump: %w", err)
				}
				end.GroupOffsets++
			}
		}
	}
	if err := enc.Encode(end); err != nil {
		return fmt.Errorf("write broker dump: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write broker dump: %w", err)
	}
	return nil
}

// Dump reads the selected topics and groups of a reachable cluster (Read)
// and writes them to path in the dump format, atomically (a temporary file
// renamed into place), so that an external broker's record can be kept in
// the evidence bundle. It returns the log it wrote.
func Dump(ctx context.Context, brokers []string, sel Selection, path string, opts ...kgo.Opt) (*Log, error) {
	log, err := Read(ctx, brokers, sel, opts...)
	if err != nil {
		return nil, fmt.Errorf("dump broker log: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("dump broker log: %w", err)
	}
	defer os.Remove(tmp.Name())
	err = WriteDump(tmp, log)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return nil, fmt.Errorf("dump broker log %s: %w", path, err)
	}
	return log, nil
}

// maxDumpLine bounds one dump line (a record of Kafka's largest default
// message size, base64-encoded, with room to spare).
const maxDumpLine = 64 << 20

// Limits of the dump reader (ReadDump, ReadDumpFrom), far above a run's
// dump (tens of KB): a dump beyond one is refused with ErrLimit. Topics
// and partitions are bounded by MaxTopics and MaxPartitions, groups by
// MaxGroups, as for a data directory.
const (
	// MaxDumpBytes bounds the dump file.
	MaxDumpBytes = 1 << 30
	// MaxDumpRecords bounds the record lines.
	MaxDumpRecords = 10_000_000
	// MaxDumpGroupOffsets bounds the group offset lines.
	MaxDumpGroupOffsets = 1_000_000
)

// ReadDump reads a dump file back into the model Read returns (see
// ReadDumpFrom). A FIFO, device or directory is refused, not waited on.
func ReadDump(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, fmt.Errorf("read broker dump: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read broker dump %s: %w: not a regular file (%v)", path, ErrBadDump, err)
	}
	log, err := decodeDumpLimited(f, MaxDumpBytes)
	if err != nil {
		return nil, fmt.Errorf("read broker dump %s: %w", path, err)
	}
	return log, nil
}

// ReadDumpFrom reads a dump from r. A dump cut short, with lines out of
// order, or whose trailer disagrees with its lines is an error naming the
// line; one over MaxDumpBytes or a count limit is ErrLimit. Nothing is
// sized from a count the dump declares: the trailer's counts are only
// compared with the lines read.
func ReadDumpFrom(r io.Reader) (*Log, error) {
	log, err := decodeDumpLimited(r, MaxDumpBytes)
	if err != nil {
		return nil, fmt.Errorf("read broker dump: %w", err)
	}
	return log, nil
}

// decodeDumpLimited decodes at most max bytes of r: a dump cut there is
// ErrLimit, whatever the cut line looks like.
func decodeDumpLimited(r io.Reader, max int64) (*Log, error) {
	lr := &io.LimitedReader{R: r, N: max + 1}
	log, err := decodeDump(lr)
	if lr.N <= 0 {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrLimit, max)
	}
	return log, err
}

// decodeDump folds the lines in order; every check that the format's
// ordering promises is here, so it is one function.
func decodeDump(r io.Reader) (*Log, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxDumpLine)
	log := &Log{Topics: map[string][]Partition{}, Groups: map[string]map[string]map[int32]int64{}}
	var (
		n      int
		cur    *Partition
		ended  bool
		counts endLine
		broken error // a line that did not parse: a cut if it is the last
	)
	for sc.Scan() {
		n++
		if broken != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrBadDump, n-1, broken)
		}
		var l dumpLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			broken = err
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: line %d: %s", ErrBadDump, n, fmt.Sprintf(format, args...))
		}
		limit := func(format string, args ...any) error {
			return fmt.Errorf("%w: line %d: %s", ErrLimit, n, fmt.Sprintf(format, args...))
		}
		switch {
		case ended:
			return nil, bad("%s after the end trailer", l.Kind)
		case n == 1 && (l.Kind != "header" || l.Format != DumpFormat):
			return nil, bad("not a %s file", DumpFormat)
		case n == 1 && l.Version > DumpVersion:
			return nil, bad("version %d is newer than %d", l.Version, DumpVersion)
		}
		switch l.Kind {
		case "header":
			if n != 1 {
				return nil, bad("second header")
			}
		case "partition":
			if l.Partition == nil || l.Start == nil || l.End == nil || l.Topic == "" || *l.Start < 0 || *l.Start > *l.End {
				return nil, bad("incomplete partition line")
			}
			if err := checkTopicName(l.Topic); err != nil {
				return nil, bad("%v", err)
			}
			if err := checkControlOffsets(l.ControlOffsets, *l.Start, *l.End); err != nil {
				return nil, bad("partition %s/%d: %v", l.Topic, *l.Partition, err)
			}
			ps := log.Topics[l.Topic]
			if ps == nil && len(log.Topics) >= MaxTopics {
				return nil, limit("more than %d topics", MaxTopics)
			}
			if counts.Partitions >= MaxPartitions {
				return nil, limit("more than %d partitions", MaxPartitions)
			}
			if int(*l.Partition) != len(ps) || len(log.Groups) > 0 {
				return nil, bad("partition %s/%d out of order", l.Topic, *l.Partition)
			}
			log.Topics[l.Topic] = append(ps, Partition{Topic: l.Topic, Partition: *l.Partition, Start: *l.Start,
				End: *l.End, Records: []Record{}, ControlOffsets: l.ControlOffsets})
			cur = &log.Topics[l.Topic][*l.Partition]
			counts.Partitions++
		case "record":
			if cur == nil || len(log.Groups) > 0 || l.Topic != cur.Topic || l.Partition == nil || *l.Partition != cur.Partition ||
				l.Offset == nil || l.TimestampMS == nil {
				return nil, bad("record outside its partition")
			}
			o := *l.Offset
			if o < cur.Start || o >= cur.End || (len(cur.Records) > 0 && o <= cur.Records[len(cur.Records)-1].Offset) {
				return nil, bad("record offset %d out of order or outside [%d, %d)", o, cur.Start, cur.End)
			}
			if counts.Records >= MaxDumpRecords {
				return nil, limit("more than %d records", MaxDumpRecords)
			}
			cur.Records = append(cur.Records, Record{Topic: cur.Topic, Partition: cur.Partition, Offset: o, Key: l.Key,
				Value: l.Value, Headers: l.Headers, Timestamp: time.UnixMilli(*l.TimestampMS).UTC()})
			counts.Records++
		case "group_offset":
			if l.Group == "" || l.Topic == "" || l.Partition == nil || l.Offset == nil {
				return nil, bad("incomplete group offset line")
			}
			if len(l.Group) > maxGroupName {
				return nil, bad("group name of %d bytes", len(l.Group))
			}
			if err := checkTopicName(l.Topic); err != nil {
				return nil, bad("%v", err)
			}
			if counts.GroupOffsets >= MaxDumpGroupOffsets {
				return nil, limit("more than %d group offsets", MaxDumpGroupOffsets)
			}
			g := log.Groups[l.Group]
			if g == nil && len(log.Groups) >= MaxGroups {
				return nil, limit("more than %d groups", MaxGroups)
			}
			if g == nil {
				g = map[string]map[int32]int64{}
				log.Groups[l.Group] = g
			}
			if g[l.Topic] == nil {
				g[l.Topic] = map[int32]int64{}
			}
			g[l.Topic][*l.Partition] = *l.Offset
			counts.GroupOffsets++
		case "end":
			if l.Partitions == nil || l.Records == nil || l.GroupOffsets == nil ||
				*l.Partitions != counts.Partitions || *l.Records != counts.Records || *l.GroupOffsets != counts.GroupOffsets {
				return nil, fmt.Errorf("%w: line %d: trailer counts disagree with the lines (%d partitions, %d records, %d group offsets)",
					ErrTruncatedDump, n, counts.Partitions, counts.Records, counts.GroupOffsets)
			}
			ended = true
		default:
			return nil, bad("unknown kind %q", l.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: after line %d: %v", ErrBadDump, n, err)
	}
	if broken != nil {
		return nil, fmt.Errorf("%w: last line %d: %v", ErrTruncatedDump, n, broken)
	}
	if !ended {
		return nil, fmt.Errorf("%w: no end trailer after line %d", ErrTruncatedDump, n)
	}
	return log, nil
}

// checkControlOffsets: a partition's control offsets are increasing and
// within [start, end).
func checkControlOffsets(offs []int64, start, end int64) error {
	for i, o := range offs {
		if o < start || o >= end || (i > 0 && o <= offs[i-1]) {
			return fmt.Errorf("control offset %d out of order or outside [%d, %d)", o, start, end)
		}
	}
	return nil
}
