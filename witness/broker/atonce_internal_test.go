package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
)

// oneAtATime reads partitions one at a time until the function it
// returns is called.
func oneAtATime() (restore func()) {
	was := atOnceFrom
	atOnceFrom = math.MaxInt
	return func() { atOnceFrom = was }
}

// TestAtOnceAsOneAtATime reads every committed data directory (20
// partitions in the example's) with its partitions at once and one at a
// time: the same plan (kfake's copy listed in the same order), the same
// log decoded, the same log opened.
func TestAtOnceAsOneAtATime(t *testing.T) {
	if !useAtOnce(2) {
		t.Skip("one processor: partitions are read one at a time")
	}
	type read struct {
		plan        *dataPlan
		eager, lazy *Log
	}
	readAll := func(d string) (r read) {
		var err error
		if r.plan, err = planDataFS(t.Context(), os.DirFS(d), true, false); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if r.eager, err = ReadDataFS(t.Context(), os.DirFS(d), Selection{}); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if r.lazy, err = OpenDataFS(t.Context(), os.DirFS(d), Selection{}); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		return r
	}
	parts := 0
	again := readAgain.Load()
	for _, d := range committedDataDirs(t) {
		atOnce := readAll(d)
		if n := readAgain.Load() - again; n != 0 {
			t.Errorf("%s: read again one at a time %d times; a directory that passes is read once", d, n)
		}
		func() {
			defer oneAtATime()()
			one := readAll(d)
			if !reflect.DeepEqual(atOnce.plan, one.plan) {
				t.Errorf("%s: the plan read at once differs from one at a time", d)
			}
			if !reflect.DeepEqual(atOnce.eager, one.eager) || !reflect.DeepEqual(atOnce.lazy, one.lazy) {
				t.Errorf("%s: the log read at once differs from one at a time", d)
			}
		}()
		for _, ps := range atOnce.eager.Topics {
			parts += len(ps)
		}
	}
	if parts < 20 {
		t.Fatalf("%d partitions in all: too few to read at once", parts)
	}
}

// TestAtOnceErrors damages two partitions of the example's directory
// (the first listed and a later one, each its own way) and makes a third
// panic: read at once, again and again, the error is always the one
// reading them one at a time meets first, as it would have been.
func TestAtOnceErrors(t *testing.T) {
	if !useAtOnce(2) {
		t.Skip("one processor: partitions are read one at a time")
	}
	const dir = "../../evidence/example/u80/witness/kafka"
	m := readTree(t, dir)
	orig := maps.Clone(m)
	plan, err := planDataFS(t.Context(), m, true, false)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string // in the order they are checked one at a time
	for _, f := range plan.files {
		if matched, _ := path.Match("partitions/*/0.dat", f.name); matched && len(f.data) > batchHeader {
			segs = append(segs, f.name)
		}
	}
	if len(segs) < 3 {
		t.Fatalf("%d segments with a batch; want 3", len(segs))
	}
	first, later, third := segs[0], segs[len(segs)/2], segs[len(segs)-1]
	damage := func(name string, at int) {
		b := slices.Clone(m[name].Data)
		b[at] ^= 0xff
		m[name] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	damage(later, 16)                   // its magic: refused as damaged, not 2
	damage(first, len(m[first].Data)-1) // its last byte: a CRC that fails
	hostile := panicFS{m, third}
	var want error
	func() {
		defer oneAtATime()()
		_, want = ReadDataFS(t.Context(), hostile, Selection{})
	}()
	if !errors.Is(want, ErrDamaged) || !strings.Contains(want.Error(), first) {
		t.Fatalf("one at a time: %v; want %s damaged", want, first)
	}
	for i := range 30 {
		for _, read := range []func(context.Context, fs.FS, Selection) (*Log, error){ReadDataFS, OpenDataFS} {
			again := readAgain.Load()
			if _, err := read(t.Context(), hostile, Selection{}); err == nil || err.Error() != want.Error() {
				t.Fatalf("round %d at once: %v; want %v", i, err, want)
			}
			if readAgain.Load() == again {
				t.Fatalf("round %d: refused at once, not read again one at a time", i)
			}
		}
	}
	// The headers' limit, shared: one header fewer than the directory
	// holds, so that the last to count meets it, whichever that is.
	m = readTree(t, dir)
	log, err := ReadDataFS(t.Context(), m, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, ps := range log.Topics {
		for _, p := range ps {
			for _, r := range p.Records {
				total += int64(len(r.Headers))
			}
		}
	}
	was := maxHeaders
	maxHeaders = total - 1
	defer func() { maxHeaders = was }()
	func() {
		defer oneAtATime()()
		_, want = ReadDataFS(t.Context(), m, Selection{})
	}()
	if !errors.Is(want, ErrLimit) {
		t.Fatalf("%d headers, at most %d, one at a time: %v; want ErrLimit", total, maxHeaders, want)
	}
	for i := range 30 {
		for _, read := range []func(context.Context, fs.FS, Selection) (*Log, error){ReadDataFS, OpenDataFS} {
			if _, err := read(t.Context(), m, Selection{}); err == nil || err.Error() != want.Error() {
				t.Fatalf("round %d at once, %d headers, at most %d: %v; want %v", i, total, maxHeaders, err, want)
			}
		}
	}
	maxHeaders = total
	again := readAgain.Load()
	if _, err := OpenDataFS(t.Context(), m, Selection{}); err != nil || readAgain.Load() != again {
		t.Errorf("%d headers, at most as many: %v, read again %d times; want read once", total, err, readAgain.Load()-again)
	}
	m = hostile.MapFS

	// The panic alone: recovered, and the file named, as one at a time.
	m[first], m[later] = orig[first], orig[later]
	if _, err := ReadDataFS(t.Context(), hostile, Selection{}); err == nil || !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), third) {
		t.Errorf("a panic in one partition: %v; want it recovered, naming %s", err, third)
	}
}

// readTree reads the files beneath dir into a MapFS.
func readTree(t *testing.T, dir string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(os.DirFS(dir), p)
		m[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAtOnce: every job runs once when none fails; a failure or a panic
// is reported, and cancels the context the others are given. Partitions
// are read at once from two, on two processors or more.
func TestAtOnce(t *testing.T) {
	if useAtOnce(1) || useAtOnce(0) {
		t.Error("one partition read at once")
	}
	if was := runtime.GOMAXPROCS(1); was >= 2 {
		one := useAtOnce(2)
		runtime.GOMAXPROCS(was)
		if one || !useAtOnce(2) {
			t.Errorf("two partitions: at once on one processor %v, on %d %v; want false, true", one, was, useAtOnce(2))
		}
	} else {
		runtime.GOMAXPROCS(was)
	}
	var ran [50]atomic.Int32
	if !atOnce(t.Context(), len(ran), func(_ context.Context, i int) error { ran[i].Add(1); return nil }) {
		t.Fatal("atOnce failed with no job failing")
	}
	for i := range ran {
		if ran[i].Load() != 1 {
			t.Fatalf("job %d ran %d times", i, ran[i].Load())
		}
	}
	for _, bad := range []func(){func() {}, func() { panic("job") }} {
		canceled := atomic.Int32{}
		ok := atOnce(t.Context(), 50, func(ctx context.Context, i int) error {
			if i == 0 {
				bad()
				return fmt.Errorf("job 0")
			}
			<-ctx.Done() // every other job waits for the first to fail
			canceled.Add(1)
			return ctx.Err()
		})
		if ok || canceled.Load() != 49 {
			t.Errorf("a job failing: ok %v, %d of 49 others saw the context canceled", ok, canceled.Load())
		}
	}
}

// TestEachBatchHeld: a Log whose records are held gives them to EachBatch
// as EachRecord does, a partition's at most eachBatchMax at a time.
func TestEachBatchHeld(t *testing.T) {
	log := &Log{Topics: map[string][]Partition{}}
	for p, n := range []int{2*eachBatchMax + 7, 0, 3} {
		part := Partition{Topic: "t", Partition: int32(p)}
		for o := range n {
			part.Records = append(part.Records, Record{Topic: "t", Partition: int32(p), Offset: int64(o), Value: []byte(fmt.Sprint(o))})
		}
		log.Topics["t"] = append(log.Topics["t"], part)
	}
	var one, batched []Record
	if err := log.EachRecord("t", func(r *Record) error { one = append(one, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	if err := log.EachBatch("t", func(b []Record) error {
		sizes = append(sizes, len(b))
		batched = append(batched, b...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one, batched) || !slices.Equal(sizes, []int{eachBatchMax, eachBatchMax, 7, 3}) {
		t.Errorf("EachBatch gave %d records in calls of %v; want EachRecord's %d in %d, %d, 7, 3", len(batched), sizes, len(one), eachBatchMax, eachBatchMax)
	}
	stop := errors.New("stop")
	calls := 0
	if err := log.EachBatch("t", func([]Record) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("fn failing: %v after %d calls; want its error after 1", err, calls)
	}
}
