package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultTimeout bounds a read when ctx has no deadline: a partition that
// cannot be read to its end offset must fail, not hang.
const DefaultTimeout = time.Minute

// Read reads the selected topics and groups of a reachable cluster. opts
// are extra client options (TLS, SASL); the seed brokers come from brokers.
// The group offsets are read before the end offsets, so that on a live
// cluster every committed offset read is within the log read. Records
// produced after the end offsets were listed are left out.
func Read(ctx context.Context, brokers []string, sel Selection, opts ...kgo.Opt) (*Log, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	base := append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)
	cl, err := kgo.NewClient(base...)
	if err != nil {
		return nil, fmt.Errorf("read broker log: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	topics, err := selectTopics(ctx, adm, sel)
	if err != nil {
		return nil, fmt.Errorf("read broker log: %w", err)
	}
	groups, err := readGroups(ctx, adm, sel, topics)
	if err != nil {
		return nil, fmt.Errorf("read broker log: %w", err)
	}
	log := &Log{Topics: map[string][]Partition{}, Groups: groups}
	if len(topics) == 0 {
		return log, nil
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("read broker log: list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("read broker log: list end offsets: %w", err)
	}
	for _, t := range topics {
		n := len(ends[t])
		ps := make([]Partition, n)
		for p := range n {
			s, ok1 := starts.Lookup(t, int32(p))
			e, ok2 := ends.Lookup(t, int32(p))
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("read broker log: %w: no offsets for %s/%d", ErrIncomplete, t, p)
			}
			ps[p] = Partition{Topic: t, Partition: int32(p), Start: s.Offset, End: e.Offset, Records: []Record{}}
		}
		log.Topics[t] = ps
	}
	if err := consume(ctx, base, log); err != nil {
		return nil, fmt.Errorf("read broker log: %w", err)
	}
	return log, nil
}

func selectTopics(ctx context.Context, adm *kadm.Client, sel Selection) ([]string, error) {
	details, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	var out []string
	for _, t := range details.Names() {
		if (len(sel.Topics) == 0 && sel.Prefix == "") || (sel.Prefix != "" && strings.HasPrefix(t, sel.Prefix)) ||
			slices.Contains(sel.Topics, t) {
			out = append(out, t)
		}
	}
	for _, t := range sel.Topics {
		if !details.Has(t) {
			return nil, fmt.Errorf("%w: topic %s does not exist", ErrIncomplete, t)
		}
		if err := details[t].Err; err != nil {
			return nil, fmt.Errorf("topic %s: %w", t, err)
		}
	}
	slices.Sort(out)
	return out, nil
}

func readGroups(ctx context.Context, adm *kadm.Client, sel Selection, topics []string) (map[string]map[string]map[int32]int64, error) {
	names := sel.Groups
	if len(names) == 0 {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		names = listed.Groups()
	}
	out := map[string]map[string]map[int32]int64{}
	for _, g := range names {
		resp, err := adm.FetchOffsets(ctx, g)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("fetch offsets of group %s: %w", g, err)
		}
		m := map[string]map[int32]int64{}
		for t, ps := range resp {
			if !slices.Contains(topics, t) {
				continue
			}
			for p, o := range ps {
				if o.At < 0 {
					continue
				}
				if m[t] == nil {
					m[t] = map[int32]int64{}
				}
				m[t][p] = o.At
			}
		}
		if len(m) > 0 || len(sel.Groups) > 0 {
			out[g] = m
		}
	}
	return out, nil
}

// consume reads every partition of log from its start to its end offset,
// keeping control records apart so that reaching the end is visible even
// when the last offset is a transaction marker.
func consume(ctx context.Context, base []kgo.Opt, log *Log) error {
	type tp struct {
		t string
		p int32
	}
	remaining := map[tp]int64{}
	from := map[string]map[int32]kgo.Offset{}
	for t, ps := range log.Topics {
		for _, p := range ps {
			if p.End > p.Start {
				remaining[tp{t, p.Partition}] = p.End
				if from[t] == nil {
					from[t] = map[int32]kgo.Offset{}
				}
				from[t][p.Partition] = kgo.NewOffset().At(p.Start)
			}
		}
	}
	if len(remaining) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(base), kgo.ConsumePartitions(from), kgo.KeepControlRecords(),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var hs headerSlab
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			var left []string
			for k, end := range remaining {
				left = append(left, fmt.Sprintf("%s/%d (end %d)", k.t, k.p, end))
			}
			slices.Sort(left)
			return fmt.Errorf("%w: not read to the end: %s: %v", ErrIncomplete, strings.Join(left, ", "), err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("fetch %s/%d: %w", t, p, err))
		})
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			part := &log.Topics[r.Topic][r.Partition]
			if r.Offset >= part.End {
				return // produced after the end offsets were listed
			}
			if r.Attrs.IsControl() {
				part.ControlOffsets = append(part.ControlOffsets, r.Offset)
			} else {
				part.Records = append(part.Records, hs.convert(r))
			}
			if r.Offset >= remaining[k]-1 {
				delete(remaining, k)
			}
		})
	}
	return nil
}

// headerSlab hands out the records' headers from shared blocks, and
// each header name once (a log of a million records has a few names):
// not a slice and a string allocated per record.
type headerSlab struct {
	block []Header
	names map[string]string
	// reuse: each stored batch's records' headers are written over the
	// last batch's (Partition.each empties block as a batch begins), for
	// a reader that keeps no record (EachRecord and EachBatch of a Log of
	// OpenDataFS).
	reuse bool
}

// maxHeaderNames bounds the names a headerSlab keeps once.
const maxHeaderNames = 256

func (hs *headerSlab) convert(r *kgo.Record) Record {
	out := Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value,
		Timestamp: time.UnixMilli(r.Timestamp.UnixMilli()).UTC()}
	if len(r.Headers) == 0 {
		return out
	}
	at := hs.reserve(len(r.Headers))
	for _, h := range r.Headers {
		hs.push(h.Key, h.Value)
	}
	out.Headers = hs.since(at)
	return out
}

// reserve makes room for n headers in one block and returns where they
// begin.
func (hs *headerSlab) reserve(n int) int {
	if cap(hs.block)-len(hs.block) < n {
		hs.block = make([]Header, 0, max(n, 1024))
	}
	return len(hs.block)
}

// push adds one header, its name kept once (a name seen first is
// copied, so that it owns its bytes).
func (hs *headerSlab) push(key string, value []byte) {
	name, ok := hs.names[key]
	if !ok {
		name = strings.Clone(key)
		if hs.names == nil {
			hs.names = map[string]string{}
		}
		if len(hs.names) < maxHeaderNames {
			hs.names[name] = name
		}
	}
	hs.block = append(hs.block, Header{Key: name, Value: value})
}

// since returns the headers pushed since at (reserve's answer).
func (hs *headerSlab) since(at int) []Header {
	n := len(hs.block)
	return hs.block[at:n:n]
}

// ReadDataDir reads the log an embedded kfake broker persisted in dir: it
// is ReadDataFS on the files beneath dir, opened through an os.Root and
// refusing symbolic links, devices, FIFOs and sockets. dir is never
// written to.
func ReadDataDir(ctx context.Context, dir string, sel Selection) (*Log, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("read broker data %s: %w: %v", dir, ErrNotDataDir, err)
	}
	defer root.Close()
	log, err := readDataFS(ctx, rootFS{root}, sel)
	if err != nil {
		return nil, fmt.Errorf("read broker data %s: %w", dir, err)
	}
	return log, nil
}

// ReadDataFS reads the log an embedded kfake broker persisted, from fsys,
// which holds the files of its data directory (meta.json at the root).
//
// kfake trusts its directory: it sizes tables from the counts it declares,
// follows what it names and "repairs" a damaged file by cutting it. The
// reader trusts nothing: every file is checked against the layout kfake
// writes and the limits (MaxTopics, MaxPartitions, MaxFileBytes, ...); a
// path kfake does not write, an illegal topic name, a count over a limit,
// a segment whose batches do not parse (CRC, framing, record count,
// decompressed size) or disagree with the partition's snapshot, or a
// framed log with a damaged entry is refused with ErrDamaged or ErrLimit,
// naming the file. The log is then decoded from the checked batches and
// the replayed groups.log (decodePlan), as a consumer reading the broker
// back would see it; nothing is written, no broker is started. The tests
// hold this reader to kfake's own reading of the same directories.
func ReadDataFS(ctx context.Context, fsys fs.FS, sel Selection) (*Log, error) {
	log, err := readDataFS(ctx, fsys, sel)
	if err != nil {
		return nil, fmt.Errorf("read broker data: %w", err)
	}
	return log, nil
}

// OpenDataFS is ReadDataFS for a reader that takes the records once, in
// order, and keeps little of them: the same checks and the same refusals,
// every record decoded once to check it, but the Log it returns keeps
// them in their checked batches (decompressed, a few tens of bytes a
// record less than a Record each) and hands them out one at a time
// through EachRecord, once. Its partitions' Records are empty (Count says
// how many EachRecord gives); everything else is as ReadDataFS returns it.
func OpenDataFS(ctx context.Context, fsys fs.FS, sel Selection) (*Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read broker data: %w", err)
	}
	plan, err := planDataFS(ctx, fsys, false, true)
	if err == nil {
		var log *Log
		if log, err = decodePlan(ctx, plan, sel, true); err == nil {
			return log, nil
		}
	}
	return nil, fmt.Errorf("read broker data: %w", err)
}

func readDataFS(ctx context.Context, fsys fs.FS, sel Selection) (*Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	plan, err := planDataFS(ctx, fsys, false, false)
	if err != nil {
		return nil, err
	}
	return decodePlan(ctx, plan, sel, false)
}
