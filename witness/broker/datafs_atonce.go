package broker

import (
	"context"
	"fmt"
	"path"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partitions checked and decoded at once. Reading a directory is mostly
// reading its partitions (their segments' CRCs and decompression, then
// every record decoded), and no partition's reading depends on
// another's, but for the limits they share (spent, the headers' count):
// checkPartitions and decodePlan read them on up to GOMAXPROCS
// goroutines. Which partition meets an error first then depends on
// timing, and a shared limit can be met by a partition that would not
// have met it one at a time: so, when any fails, the reader reads them
// again one at a time, in order, from the counts it had before, and
// returns the error that reading meets, the same each time. The error
// path pays twice (within the same limits); a directory that passes is
// read once.

// atOnce runs fn for each of n jobs on up to GOMAXPROCS goroutines, and
// reports whether every one returned nil; the context fn is given is
// canceled at the first error, so that the others can stop. A panic of
// fn is an error (the caller's reading again, one at a time, recovers it
// where it recovers its own).
func atOnce(ctx context.Context, n int, fn func(ctx context.Context, i int) error) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg     sync.WaitGroup
		failed sync.Once
		bad    bool
	)
	fail := func() { failed.Do(func() { bad = true; cancel() }) }
	jobs := make(chan int)
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range jobs {
				func() {
					defer func() {
						if recover() != nil {
							fail()
						}
					}()
					if fn(ctx, i) != nil {
						fail()
					}
				}()
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return !bad
}

// atOnceFrom is the fewest partitions read at once, and the fewest
// processors: with fewer, they are read one at a time (tests set it
// higher to read them so).
var atOnceFrom = 2

// readAgain counts the times partitions read at once were read again
// one at a time (tests: a directory that passes is read once).
var readAgain atomic.Int64

// maxHeaders is MaxHeaders (tests lower it).
var maxHeaders int64 = MaxHeaders

func useAtOnce(n int) bool { return n >= atOnceFrom && runtime.GOMAXPROCS(0) >= atOnceFrom }

// partDir is the directory of partition n of topic t.
func partDir(t string, n int) string { return path.Join("partitions", fmt.Sprintf("%s-%d", t, n)) }

// checkAtOnce checks the partitions of topics at once, each on a checker
// of its own sharing c's counts, into a plan of its own merged into p in
// order (the directories and files kfake's copy lists, as one at a time
// would list them); false, with p and c's counts as they were, when one
// failed.
func (c *checker) checkAtOnce(p *dataPlan, topics []diskTopic) bool {
	type job struct {
		topic string
		n     int
		plan  *dataPlan
		snap  diskSnapshot
		cur   []batch
	}
	var jobs []*job
	for _, t := range topics {
		for n := range t.Partitions {
			jobs = append(jobs, &job{topic: t.Name, n: n, plan: &dataPlan{keep: p.keep}})
		}
	}
	if !useAtOnce(len(jobs)) {
		return false
	}
	was := [4]int64{c.spent.files.Load(), c.spent.read.Load(), c.spent.decoded.Load(), c.spent.records.Load()}
	ok := atOnce(c.ctx, len(jobs), func(ctx context.Context, i int) error {
		j := jobs[i]
		sub := &checker{ctx: ctx, fsys: c.fsys, spent: c.spent, keep: c.keep, drop: c.drop}
		snap, err := sub.checkPartition(j.plan, partDir(j.topic, j.n))
		j.snap, j.cur = snap, sub.cur
		return err
	})
	if !ok {
		readAgain.Add(1)
		c.spent.files.Store(was[0])
		c.spent.read.Store(was[1])
		c.spent.decoded.Store(was[2])
		c.spent.records.Store(was[3])
		return false
	}
	for _, j := range jobs {
		p.dirs = append(p.dirs, j.plan.dirs...)
		p.files = append(p.files, j.plan.files...)
		p.snaps[j.topic][j.n] = j.snap
		p.batches[j.topic][j.n] = j.cur
	}
	return true
}

// decodeAtOnce decodes (or, lazy, opens) the partitions of topics at
// once into log, each with a record and header slab of its own, counting
// the headers in headers; false, with headers as it was, when one
// failed (log then holds partitions in part: decodePlan fills it again).
func decodeAtOnce(ctx context.Context, p *dataPlan, topics []string, log *Log, headers *atomic.Int64) bool {
	type job struct {
		topic string
		n     int
	}
	var jobs []job
	for _, t := range topics {
		for n := range p.snaps[t] {
			jobs = append(jobs, job{t, n})
		}
	}
	if !useAtOnce(len(jobs)) {
		return false
	}
	was := headers.Load()
	ok := atOnce(ctx, len(jobs), func(ctx context.Context, i int) error {
		j := jobs[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		part, err := readPartition(p, j.topic, j.n, &kmsg.Record{}, &headerSlab{reuse: log.lazy}, headers, log.lazy)
		log.Topics[j.topic][j.n] = part
		return err
	})
	// Each partition held the headers to the limit with the others'
	// counts of their batches before its own: the sum is held to it here,
	// as one at a time holds it.
	if !ok || headers.Load() > maxHeaders {
		readAgain.Add(1)
		headers.Store(was)
		return false
	}
	return true
}
