package broker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
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
	// MaxDataBytes bounds all files together: the reader holds the
	// segments in memory (an uncompressed batch's records are read in
	// place).
	MaxDataBytes = 256 << 20
	// MaxBatchBytes bounds one record batch's records once decompressed
	// (Kafka's default message size limit is 1 MiB).
	MaxBatchBytes = 16 << 20
	// MaxDecodedBytes bounds the records of all batches once
	// decompressed: what the Log read from the directory holds.
	MaxDecodedBytes = 512 << 20
	// MaxRecords bounds the records of all batches (as MaxDumpRecords a
	// dump's): a record of a few bytes is a Record of about 130 in the
	// Log, so the decompressed bytes alone do not bound the memory.
	MaxRecords = 10_000_000
	// MaxHeaders bounds the headers of all records, and a record's
	// headers the bytes it has left for them (at least 2 each): kmsg
	// sizes a record's header array from the count it declares.
	MaxHeaders = 10_000_000
	// MaxLogEntries bounds the entries of groups.log and pids.log.
	MaxLogEntries = 1 << 20
	// MaxGroups bounds the consumer groups groups.log names.
	MaxGroups = 10_000
)

// The files kfake writes at the top of its data directory (persist.go,
// saveToDisk and saveSessionState), and whether the reader uses them. It
// needs the topics, their partitions and the groups' committed offsets;
// the others configure a live broker (ACLs, SASL users, quotas, broker
// configs, producer ids and sequence windows, members' sessions). Those
// are checked (size, framing, JSON) like the rest but not used (nor given
// to kfake by the tests' oracle).
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

// dataPlan is a checked data directory: what the reader decodes (the
// topics, each partition's snapshot and batches, the replayed commits)
// and, for the tests' kfake oracle, the files of the copy kfake loads
// (slash paths, in creation order, parents first).
type dataPlan struct {
	// keep: the plan keeps dirs and files, the copy kfake would load
	// (only the tests' kfake oracle asks for it; the reader decodes the
	// batches itself and writes nothing).
	keep  bool
	dirs  []string
	files []planFile
	snaps map[string][]diskSnapshot
	// topics are the topics of topics.json as checked, and batches each
	// partition's record batches (topic -> partition -> batches, in
	// offset order) with their records decompressed.
	topics  []diskTopic
	batches map[string][][]batch
	// commits replays groups.log as kfake does: each group's latest
	// commit per topic and partition, a delete removing it.
	commits map[string]map[string]map[int32]int64
	size    int64 // bytes of the files read
}

type planFile struct {
	name string
	data []byte
}

// planDataFS checks a kfake data directory held by fsys against the layout
// kfake writes and the limits above, and returns what decodePlan reads
// (with keep, also the copy to give kfake). Nothing is trusted: every
// path must be one kfake writes, every count is checked against the
// limits before anything is sized from it, and every segment is parsed
// batch by batch (CRC, offsets, records, decompressed sizes), so that
// neither decodePlan nor kfake loading the copy meets a repair, a
// warning or a panic.
//
// With drop (OpenDataFS), a compressed batch's records are decompressed
// into one buffer, reused, to be checked, and not kept: open decompresses
// them again, one batch at a time, as EachRecord does (at a million
// records, 150 MB of memory not taken, and twice as fast).
func planDataFS(ctx context.Context, fsys fs.FS, keep, drop bool) (p *dataPlan, err error) {
	c := &checker{ctx: ctx, fsys: fsys, keep: keep, drop: drop, spent: &spent{}}
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, damaged(c.at, "panic while checking: %v", r)
		}
	}()
	return c.plan()
}

func (c *checker) plan() (*dataPlan, error) {
	p := &dataPlan{keep: c.keep, snaps: map[string][]diskSnapshot{}, batches: map[string][][]batch{},
		commits: map[string]map[string]map[int32]int64{}}
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
	p.topics = clean.Topics

	for _, name := range []string{"groups.log", "pids.log"} {
		if _, ok := present[name]; !ok {
			continue
		}
		b, err := c.readFile(name, MaxFileBytes)
		if err != nil {
			return nil, err
		}
		var replay func(diskGroupEntry)
		if name == "groups.log" {
			replay = p.replay
		}
		if err := checkEntryLog(name, b, replay); err != nil {
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
	p.size = c.spent.read.Load()
	return p, nil
}

func (p *dataPlan) add(name string, data []byte) {
	if p.keep {
		p.files = append(p.files, planFile{name, data})
	}
}

// replay applies one checked groups.log entry the way kfake's load does
// (replayGroupsLog): a commit replaces the group's offset for its topic
// and partition, a delete removes it; the other entries hold no offset.
func (p *dataPlan) replay(e diskGroupEntry) {
	switch e.Type {
	case "commit":
		g := p.commits[e.Group]
		if g == nil {
			g = map[string]map[int32]int64{}
			p.commits[e.Group] = g
		}
		if g[e.Topic] == nil {
			g[e.Topic] = map[int32]int64{}
		}
		g[e.Topic][e.Part] = e.Offset
	case "delete":
		delete(p.commits[e.Group][e.Topic], e.Part)
	case "meta", "meta848":
		if p.commits[e.Group] == nil {
			p.commits[e.Group] = map[string]map[int32]int64{}
		}
	}
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
		p.batches[t.Name] = make([][]batch, t.Partitions)
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
	if c.checkAtOnce(p, topics) {
		return nil
	}
	for _, t := range topics {
		for n := range t.Partitions {
			dir := partDir(t.Name, n)
			c.cur = nil
			snap, err := c.checkPartition(p, dir)
			if err != nil {
				return err
			}
			p.snaps[t.Name][n] = snap
			p.batches[t.Name][n] = c.cur
		}
	}
	return nil
}
