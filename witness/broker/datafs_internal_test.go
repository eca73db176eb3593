package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/twmb/franz-go/pkg/kmsg"
	"maps"
	"sync/atomic"

	"context"
	"fmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"time"

	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// committedDataDirs are the kfake data directories of the committed
// bundles: real runs, which the checks must all accept.
func committedDataDirs(t testing.TB) []string {
	t.Helper()
	var dirs []string
	for _, root := range []string{"../../evidence/example", "../../checks/testdata"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "kafka" && filepath.Base(filepath.Dir(p)) == "witness" {
				dirs = append(dirs, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(dirs) < 3 {
		t.Fatalf("found only %d committed data directories", len(dirs))
	}
	return dirs
}

func TestPlanCommittedDataDirs(t *testing.T) {
	for _, d := range committedDataDirs(t) {
		p, err := planDataFS(t.Context(), os.DirFS(d), true, false)
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		t.Logf("%s: %d files to copy, %d bytes read", d, len(p.files), p.size)
	}
}

// TestDecodeMatchesKfake reads every committed data directory and the
// seed both ways, by decoding the checked batches (ReadDataFS) and through
// kfake and a client (readViaKfake, how the reader read before): the two
// logs must be equal, record by record, header by header, offset by
// offset, group by group.
func TestDecodeMatchesKfake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded broker per directory")
	}
	dirs := append(committedDataDirs(t), seedDir)
	for _, d := range dirs {
		for _, sel := range []Selection{{}, {Prefix: "ofa."}} {
			got, err := ReadDataFS(t.Context(), os.DirFS(d), sel)
			if err != nil {
				t.Errorf("%s: ReadDataFS: %v", d, err)
				continue
			}
			want, err := readViaKfake(t.Context(), os.DirFS(d), sel, t.TempDir())
			if err != nil {
				t.Errorf("%s: kfake: %v", d, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (%+v): the decoded log and kfake's differ:\n%+v\n%+v", d, sel, got, want)
			}
			if opened := openAsRead(t, os.DirFS(d), sel); !reflect.DeepEqual(opened, got) {
				t.Errorf("%s (%+v): OpenDataFS and EachRecord differ from ReadDataFS:\n%+v\n%+v", d, sel, opened, got)
			}
			var n int
			for _, ps := range got.Topics {
				for _, p := range ps {
					n += len(p.Records)
				}
			}
			t.Logf("%s %+v: %d topics, %d records, %d groups", d, sel, len(got.Topics), n, len(got.Groups))
		}
	}
}

// TestDecodeMatchesKfakeTransactions: a directory with what the committed
// runs never write (a committed and an aborted transaction, so control
// records; a topic whose timestamps are the broker's append time; a null
// key, an empty value, a null header value; several batches and
// partitions; a group commit deleted), read both ways.
func TestDecodeMatchesKfakeTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded broker")
	}
	dir := filepath.Join(t.TempDir(), "kafka")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir), kfake.SeedTopics(2, "tx"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ka := kadm.NewClient(adm)
	appendTime := "LogAppendTime"
	if _, err := ka.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": &appendTime}, "appended"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("tx-1"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, commit := range []bool{true, false, true} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := range int32(2) {
			rs := []*kgo.Record{
				{Topic: "tx", Partition: p, Key: []byte(fmt.Sprint("k", i)), Value: []byte("v"),
					Headers: []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "n", Value: nil}}},
				{Topic: "tx", Partition: p, Value: []byte{}},
			}
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("appended"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for i := range 3 {
		if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}, Timestamp: time.UnixMilli(1000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.AddOffset("tx", 0, 3, -1)
	offs.AddOffset("tx", 1, 5, -1)
	offs.AddOffset("appended", 0, 2, -1)
	if err := ka.CommitAllOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	if _, err := ka.DeleteOffsets(ctx, "g", kadm.TopicsSet{"appended": {0: {}}}); err != nil {
		t.Fatal(err)
	}
	plain.Close()
	cl.Close()
	adm.Close()
	c.Close()

	got, err := ReadDataFS(t.Context(), os.DirFS(dir), Selection{})
	if err != nil {
		t.Fatalf("ReadDataFS: %v", err)
	}
	want, err := readViaKfake(t.Context(), os.DirFS(dir), Selection{}, t.TempDir())
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the decoded log and kfake's differ:\n%+v\n%+v", got, want)
	}
	if opened := openAsRead(t, os.DirFS(dir), Selection{}); !reflect.DeepEqual(opened, got) {
		t.Errorf("OpenDataFS and EachRecord differ from ReadDataFS:\n%+v\n%+v", opened, got)
	}
	tx := got.Topics["tx"]
	if len(tx) != 2 || len(tx[0].Records) != 6 || len(tx[0].ControlOffsets) != 3 {
		t.Errorf("tx/0: %d records, control offsets %v; want 6 records (an aborted transaction's too), 3 markers",
			len(tx[0].Records), tx[0].ControlOffsets)
	}
	if ap := got.Topics["appended"]; len(ap) != 1 || len(ap[0].Records) != 3 {
		t.Errorf("appended: %+v; want 3 records", ap)
	}
	if _, ok := got.Committed("g", "appended", 0); ok || len(got.Groups["g"]["tx"]) != 2 {
		t.Errorf("groups %v; want g's two tx offsets, its deleted one gone", got.Groups)
	}
}

// openAsRead reads fsys with OpenDataFS and fills its partitions'
// Records from EachRecord (each record copied, its key, value and
// headers too, as EachRecord reuses their memory), checking Count: a Log to compare with
// ReadDataFS's. It fails the test if OpenDataFS fails.
func openAsRead(t testing.TB, fsys fs.FS, sel Selection) *Log {
	t.Helper()
	log, err := OpenDataFS(t.Context(), fsys, sel)
	if err != nil {
		t.Fatalf("OpenDataFS: %v", err)
	}
	out := &Log{Topics: map[string][]Partition{}, Groups: log.Groups}
	for k, topic := range slices.Sorted(maps.Keys(log.Topics)) {
		parts := log.Topics[topic]
		for _, p := range parts {
			if len(p.Records) != 0 {
				t.Fatalf("%s/%d: OpenDataFS kept %d records", topic, p.Partition, len(p.Records))
			}
		}
		recs := make([][]Record, len(parts))
		keep := func(r *Record) {
			c := *r // its key, value and headers are EachRecord's until the call returns
			c.Key, c.Value, c.Headers = bytes.Clone(r.Key), bytes.Clone(r.Value), slices.Clone(r.Headers)
			for i, h := range c.Headers {
				c.Headers[i].Value = bytes.Clone(h.Value)
			}
			recs[r.Partition] = append(recs[r.Partition], c)
		}
		if k%2 == 0 || len(log.Topics) == 1 {
			err = log.EachRecord(topic, func(r *Record) error {
				keep(r)
				return nil
			})
		} else {
			// A stored batch's records at a time, each still itself
			// when the last was decoded: kept as the call ends.
			err = log.EachBatch(topic, func(b []Record) error {
				if len(b) == 0 {
					t.Errorf("EachBatch(%s) gave no record", topic)
				}
				for i := range b {
					if b[i].Partition != b[0].Partition || i > 0 && b[i].Offset <= b[i-1].Offset {
						t.Errorf("EachBatch(%s) gave %d/%d after %d/%d", topic, b[i].Partition, b[i].Offset, b[0].Partition, b[max(i-1, 0)].Offset)
					}
					keep(&b[i])
				}
				return nil
			})
		}
		if err != nil {
			t.Fatalf("EachRecord(%s): %v", topic, err)
		}
		if err := log.EachRecord(topic, func(*Record) error { return nil }); !errors.Is(err, ErrIncomplete) {
			t.Fatalf("EachRecord(%s) a second time = %v; want ErrIncomplete", topic, err)
		}
		for n, p := range parts {
			if recs[n] == nil {
				recs[n] = []Record{} // as ReadDataFS makes it
			}
			if p.Count() != len(recs[n]) {
				t.Errorf("%s/%d: Count %d, EachRecord gave %d", topic, n, p.Count(), len(recs[n]))
			}
			out.Topics[topic] = append(out.Topics[topic], Partition{Topic: p.Topic, Partition: p.Partition,
				Start: p.Start, End: p.End, Records: recs[n], ControlOffsets: p.ControlOffsets})
		}
	}
	return out
}

// encodeRecords frames records as a batch holds them.
func encodeRecords(rs ...kmsg.Record) []byte {
	var out []byte
	for _, r := range rs {
		body := r.AppendTo(nil)
		_, k := binary.Varint(body) // AppendTo wrote Length as given: re-frame
		body = body[k:]
		out = binary.AppendVarint(out, int64(len(body)))
		out = append(out, body...)
	}
	return out
}

// TestDecodeBatch holds decode to the record batch format on what the
// committed directories do not show: the broker's append time, control
// batches, the log start inside a batch, and records it must refuse.
func TestDecodeBatch(t *testing.T) {
	recs := encodeRecords(
		kmsg.Record{TimestampDelta64: 5, OffsetDelta: 0, Key: []byte("a"), Value: []byte("1")},
		kmsg.Record{TimestampDelta64: 7, OffsetDelta: 2, Value: []byte("2"),
			Headers: []kmsg.Header{{Key: "h", Value: nil}}})
	read := func(start, end int64, bs ...batch) (Partition, error) {
		p := Partition{Topic: "t", Start: start, End: end}
		var hs headerSlab
		var rec kmsg.Record
		var headers atomic.Int64
		return p, p.decode(bs, &rec, &hs, &headers)
	}
	base := batch{file: "f", first: 10, last: 12, firstTS: 1000, maxTS: 9000, n: 2, recs: recs}
	p, err := read(0, 100, base)
	if err != nil || len(p.Records) != 2 || p.Records[0].Offset != 10 || p.Records[1].Offset != 12 ||
		p.Records[0].Timestamp.UnixMilli() != 1005 || p.Records[1].Timestamp.UnixMilli() != 1007 ||
		p.Records[0].Key == nil || string(p.Records[1].Value) != "2" || p.Records[1].Key != nil ||
		len(p.Records[1].Headers) != 1 || p.Records[1].Headers[0].Key != "h" || p.Records[1].Headers[0].Value != nil {
		t.Fatalf("plain batch: %+v, %v", p, err)
	}
	appended := base
	appended.attrs = attrLogAppendTime
	if p, err := read(0, 100, appended); err != nil || p.Records[0].Timestamp.UnixMilli() != 9000 || p.Records[1].Timestamp.UnixMilli() != 9000 {
		t.Errorf("append-time batch: %+v, %v; want every record at the batch's max timestamp", p, err)
	}
	control := base
	control.attrs = attrControl
	if p, err := read(0, 100, control); err != nil || len(p.Records) != 0 || len(p.ControlOffsets) != 2 || p.ControlOffsets[1] != 12 {
		t.Errorf("control batch: %+v, %v; want offsets 10 and 12 as control offsets", p, err)
	}
	if p, err := read(11, 12, base); err != nil || len(p.Records) != 0 {
		t.Errorf("[11, 12): %+v, %v; want no record", p, err)
	}
	if p, err := read(12, 13, base); err != nil || len(p.Records) != 1 || p.Records[0].Offset != 12 {
		t.Errorf("[12, 13): %+v, %v; want the record at 12", p, err)
	}
	if p, err := read(0, 12, base); err != nil || len(p.Records) != 1 || p.Records[0].Offset != 10 {
		t.Errorf("[0, 12): %+v, %v; want the record at 10", p, err)
	}
	for name, b := range map[string]batch{
		"offset past the batch": {file: "f", first: 10, last: 11, n: 2, recs: recs},
		"offsets not increasing": {file: "f", first: 10, last: 12, n: 2, recs: encodeRecords(
			kmsg.Record{OffsetDelta: 1}, kmsg.Record{OffsetDelta: 1})},
		"negative offset delta": {file: "f", first: 10, last: 12, n: 1, recs: encodeRecords(kmsg.Record{OffsetDelta: -1})},
		"record cut inside":     {file: "f", first: 10, last: 12, n: 1, recs: []byte{4, 0, 0, 0, 20}},
	} {
		if _, err := read(0, 100, b); !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: %v; want ErrDamaged", name, err)
		}
	}
	if _, err := read(0, 100, base, base); !errors.Is(err, ErrDamaged) {
		t.Errorf("a batch repeating the offsets before it: %v; want ErrDamaged", err)
	}
	// A record declaring more headers than its bytes can hold is refused
	// before kmsg makes an array of that many.
	one := kmsg.Record{Value: []byte("v")}
	many := one.AppendTo(nil)
	_, k := binary.Varint(many)
	many = append(many[k:len(many)-1], binary.AppendVarint(nil, 1<<30)...) // the count, last
	huge := append(binary.AppendVarint(nil, int64(len(many))), many...)
	if _, err := read(0, 100, batch{file: "f", first: 10, last: 12, n: 1, recs: huge}); !errors.Is(err, ErrLimit) {
		t.Errorf("a record declaring 2^30 headers: %v; want ErrLimit", err)
	}
}

// FuzzDecodeRecords feeds a batch's records, as checkRecords frames them,
// to decode: whatever the bytes, decode must not panic, refuses only as
// damaged or over a limit, and what it accepts is within its batch, in increasing offsets, one record per
// framed record, with keys, values and headers that are slices of the
// batch's bytes.
func FuzzDecodeRecords(f *testing.F) {
	f.Add(encodeRecords(kmsg.Record{Key: []byte("k"), Value: []byte("v"), Headers: []kmsg.Header{{Key: "h", Value: []byte("1")}}},
		kmsg.Record{OffsetDelta: 1, TimestampDelta64: 3}), uint16(0), int64(1))
	f.Add([]byte{4, 0, 0, 0, 20}, uint16(attrControl), int64(0))
	f.Fuzz(func(t *testing.T, recs []byte, attrs uint16, delta int64) {
		c := &checker{spent: &spent{}}
		n := int64(0)
		for rest := recs; len(rest) > 0; n++ {
			l, k := binary.Varint(rest)
			if k <= 0 || l < 0 || l > int64(len(rest)-k) {
				return // checkRecords refuses it
			}
			rest = rest[k+int(l):]
		}
		got, err := c.checkRecords("f", 0, codecNone, recs, n)
		if err != nil {
			t.Fatalf("checkRecords refused what it frames: %v", err)
		}
		delta = min(max(delta, 0), 1<<20)
		b := batch{file: "f", first: 100, last: 100 + delta, attrs: attrs, firstTS: 1, maxTS: 2, n: int(n), recs: got}
		p := Partition{Topic: "t", Start: 0, End: 1 << 40}
		var headers atomic.Int64
		if err := p.decode([]batch{b}, &kmsg.Record{}, &headerSlab{}, &headers); err != nil {
			if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrLimit) {
				t.Fatalf("decode = %v; want ErrDamaged or ErrLimit", err)
			}
			return
		}
		if int64(len(p.Records)+len(p.ControlOffsets)) != n {
			t.Fatalf("%d records and %d markers from %d framed records", len(p.Records), len(p.ControlOffsets), n)
		}
		prev, nh := int64(-1), int64(0)
		for _, r := range p.Records {
			if r.Offset <= prev || r.Offset < b.first || r.Offset > b.last {
				t.Fatalf("offset %d after %d, batch [%d, %d]", r.Offset, prev, b.first, b.last)
			}
			prev = r.Offset
			nh += int64(len(r.Headers))
		}
		if b.attrs&attrControl == 0 && nh != headers.Load() {
			t.Fatalf("%d headers decoded; headerCount counted %d", nh, headers.Load())
		}
	})
}
