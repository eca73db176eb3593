package broker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

const (
	chain = "ofa.t.chain"
	other = "ofa.t.other"
)

var base = time.Date(2030, 1, 2, 3, 4, 5, 678_000_000, time.UTC)

// produced is what populate writes: partition -> records in offset order.
var produced = map[string][][]broker.Record{
	chain: {
		{
			rec(chain, 0, 0, []byte("1"), []byte(`{"orderId":1}`), broker.Header{Key: "event_id", Value: []byte("e-1")},
				broker.Header{Key: "claim_version", Value: []byte("1")}),
			rec(chain, 0, 1, []byte("1"), []byte(`{"orderId":1}`), broker.Header{Key: "event_id", Value: []byte("e-1")},
				broker.Header{Key: "claim_version", Value: []byte("2")}),
		},
		{
			rec(chain, 1, 0, []byte("2"), []byte(`{"orderId":2}`), broker.Header{Key: "event_id", Value: []byte("e-2")},
				broker.Header{Key: "null-header", Value: nil}),
			rec(chain, 1, 1, nil, []byte{}),
			rec(chain, 1, 2, []byte{}, nil),
		},
		{},
	},
	other: {{rec(other, 0, 0, []byte("9"), []byte("x"))}},
}

func rec(topic string, p int32, off int64, key, value []byte, hs ...broker.Header) broker.Record {
	return broker.Record{Topic: topic, Partition: p, Offset: off, Key: key, Value: value, Headers: hs,
		Timestamp: base.Add(time.Duration(p*10+int32(off)) * time.Millisecond)}
}

// wantGroups are the committed offsets populate leaves: the notify group
// consumed everything of chain with a real group member and manual commits;
// audit committed by hand.
var wantGroups = map[string]map[string]map[int32]int64{
	"notify-t": {chain: {0: 2, 1: 3}},
	"audit-t":  {chain: {0: 1}, other: {0: 1}},
}

func startCluster(t *testing.T, dir string) *kfake.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts an embedded broker (skipped with -short)")
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, chain), kfake.SeedTopics(1, other),
		kfake.SeedTopics(1, "unrelated")}
	if dir != "" {
		opts = append(opts, kfake.DataDir(dir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	return c
}

// populate produces the records of produced (and one in "unrelated") and
// commits the groups' offsets.
func populate(t *testing.T, c *kfake.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, topic := range []string{chain, other} {
		for _, p := range produced[topic] {
			for _, r := range p {
				kr := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
				for _, h := range r.Headers {
					kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
				}
				rs = append(rs, kr)
			}
		}
	}
	rs = append(rs, &kgo.Record{Topic: "unrelated", Value: []byte("u")})
	for _, r := range rs { // one at a time: offsets in the order of produced
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	group, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup("notify-t"),
		kgo.ConsumeTopics(chain), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	for n := 0; n < 5; {
		fs := group.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		recs := fs.Records()
		n += len(recs)
		if err := group.CommitRecords(ctx, recs...); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.AddOffset(chain, 0, 1, -1)
	offs.AddOffset(other, 0, 1, -1)
	offs.AddOffset("unrelated", 0, 1, -1)
	if err := adm.CommitAllOffsets(ctx, "audit-t", offs); err != nil {
		t.Fatalf("commit audit-t: %v", err)
	}
}

func checkLog(t *testing.T, label string, got *broker.Log) {
	t.Helper()
	if names := got.TopicNames(); !reflect.DeepEqual(names, []string{chain, other}) {
		t.Fatalf("%s: topics %v; want %v", label, names, []string{chain, other})
	}
	for topic, parts := range produced {
		if len(got.Topics[topic]) != len(parts) {
			t.Fatalf("%s: %s has %d partitions; want %d", label, topic, len(got.Topics[topic]), len(parts))
		}
		for p, want := range parts {
			gp := got.Topics[topic][p]
			if gp.Start != 0 || gp.End != int64(len(want)) || len(gp.Records) != len(want) {
				t.Errorf("%s: %s/%d: [%d, %d) with %d records; want [0, %d)", label, topic, p, gp.Start, gp.End, len(gp.Records), len(want))
				continue
			}
			for i, w := range want {
				if g := gp.Records[i]; !reflect.DeepEqual(g, w) {
					t.Errorf("%s: %s/%d@%d = %+v; want %+v", label, topic, p, i, g, w)
				}
			}
		}
	}
	if !reflect.DeepEqual(got.Groups, wantGroups) {
		t.Errorf("%s: groups %v; want %v", label, got.Groups, wantGroups)
	}
	if r, ok := got.Record(chain, 0, 1); !ok || string(r.Headers[1].Value) != "2" {
		t.Errorf("%s: Record(%s, 0, 1) = %+v, %v", label, chain, r, ok)
	}
	if o, ok := got.Committed("notify-t", chain, 1); !ok || o != 3 {
		t.Errorf("%s: Committed(notify-t, %s, 1) = %d, %v; want 3", label, chain, o, ok)
	}
}

// TestWitnesses fills a kfake broker that persists into a data directory,
// reads it live (Read), dumps it (Dump, ReadDump), closes it and reads the
// directory (ReadDataDir): the three must give the same, exact log.
func TestWitnesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kafka")
	c := startCluster(t, dir)
	populate(t, c)
	sel := broker.Selection{Prefix: "ofa.t."}

	live, err := broker.Read(t.Context(), c.ListenAddrs(), sel)
	if err != nil {
		c.Close()
		t.Fatalf("Read: %v", err)
	}
	checkLog(t, "live", live)
	dump := filepath.Join(t.TempDir(), "kafka.jsonl")
	dumped, err := broker.Dump(t.Context(), c.ListenAddrs(), sel, dump)
	c.Close()
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	checkLog(t, "dumped", dumped)
	back, err := broker.ReadDump(dump)
	if err != nil {
		t.Fatalf("ReadDump: %v", err)
	}
	checkLog(t, "dump read back", back)

	before := digestDir(t, dir)
	fromDir, err := broker.ReadDataDir(t.Context(), dir, sel)
	if err != nil {
		t.Fatalf("ReadDataDir: %v", err)
	}
	checkLog(t, "data dir", fromDir)
	if !reflect.DeepEqual(fromDir, back) {
		t.Errorf("data dir and dump disagree:\n%+v\n%+v", fromDir, back)
	}
	if after := digestDir(t, dir); after != before {
		t.Errorf("ReadDataDir changed the evidence directory")
	}

	t.Run("selection", func(t *testing.T) {
		l, err := broker.ReadDataDir(t.Context(), dir, broker.Selection{Topics: []string{other}, Groups: []string{"audit-t"}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]map[string]map[int32]int64{"audit-t": {other: {0: 1}}}
		if !reflect.DeepEqual(l.TopicNames(), []string{other}) || !reflect.DeepEqual(l.Groups, want) {
			t.Errorf("topics %v groups %v; want [%s] %v", l.TopicNames(), l.Groups, other, want)
		}
		if _, err := broker.ReadDataDir(t.Context(), dir, broker.Selection{Topics: []string{"missing"}}); !errors.Is(err, broker.ErrIncomplete) {
			t.Errorf("missing topic: %v; want ErrIncomplete", err)
		}
	})
	t.Run("damaged data dir", func(t *testing.T) { testDamagedDir(t, dir) })
	t.Run("damaged dump", func(t *testing.T) { testDamagedDump(t, dump) })
}

func digestDir(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// testDamagedDir cuts the files kfake keeps: every cut must be ErrDamaged,
// never a shorter log.
func testDamagedDir(t *testing.T, dir string) {
	var segments, groups []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case strings.HasSuffix(p, ".dat") && strings.Contains(p, chain):
			if st, _ := os.Stat(p); st.Size() > 0 {
				segments = append(segments, p)
			}
		case filepath.Base(p) == "groups.log":
			groups = append(groups, p)
		}
		return nil
	})
	if len(segments) == 0 || len(groups) == 0 {
		t.Fatalf("no segment or groups.log under %s", dir)
	}
	for _, c := range []struct {
		name string
		file string
		half bool // cut at half the size: on chain/0, two equal batches, so at a batch boundary
	}{{"segment cut short", segments[0], false}, {"segment cut at a batch boundary", chainSegment(t, segments), true},
		{"groups.log cut short", groups[0], false}} {
		t.Run(c.name, func(t *testing.T) {
			copyDir := filepath.Join(t.TempDir(), "kafka")
			if err := os.CopyFS(copyDir, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(dir, c.file)
			target := filepath.Join(copyDir, rel)
			st, err := os.Stat(target)
			if err != nil {
				t.Fatal(err)
			}
			size := st.Size() - 5
			if c.half {
				size = st.Size() / 2
			}
			if err := os.Truncate(target, size); err != nil {
				t.Fatal(err)
			}
			_, err = broker.ReadDataDir(t.Context(), copyDir, broker.Selection{Prefix: "ofa.t."})
			if !errors.Is(err, broker.ErrDamaged) {
				t.Fatalf("ReadDataDir = %v; want ErrDamaged", err)
			}
			t.Log(err)
		})
	}
	if _, err := broker.ReadDataDir(t.Context(), t.TempDir(), broker.Selection{}); !errors.Is(err, broker.ErrNotDataDir) {
		t.Errorf("empty directory: %v; want ErrNotDataDir", err)
	}
}

func chainSegment(t *testing.T, segments []string) string {
	for _, s := range segments {
		if strings.Contains(s, chain+"-0") {
			return s
		}
	}
	t.Fatalf("no segment of %s-0 in %v", chain, segments)
	return ""
}

func testDamagedDump(t *testing.T, dump string) {
	good, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(good, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty piece after the last newline
	cat := func(ls ...[]byte) []byte { return bytes.Join(ls, nil) }
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"cut inside a line", good[:len(good)-10], broker.ErrTruncatedDump},
		{"cut before the trailer", cat(lines[:len(lines)-1]...), broker.ErrTruncatedDump},
		{"a record line missing", cat(append(append([][]byte{}, lines[:3]...), lines[4:]...)...), broker.ErrTruncatedDump},
		{"empty", nil, broker.ErrTruncatedDump},
		{"another format", []byte(`{"kind":"header","format":"x","version":1}` + "\n"), broker.ErrBadDump},
		{"garbage line", cat(lines[0], []byte("garbage\n"), cat(lines[1:]...)), broker.ErrBadDump},
		{"records swapped", cat(lines[0], lines[1], lines[3], lines[2], cat(lines[4:]...)), broker.ErrBadDump},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "kafka.jsonl")
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := broker.ReadDump(p); !errors.Is(err, c.want) {
				t.Fatalf("ReadDump = %v; want %v", err, c.want)
			}
		})
	}
}

// TestDumpFormat pins the dump format: a reader of old evidence depends on
// it, so a change must be deliberate (and bump DumpVersion).
func TestDumpFormat(t *testing.T) {
	l := &broker.Log{
		Topics: map[string][]broker.Partition{"t": {{Topic: "t", Partition: 0, Start: 0, End: 3, ControlOffsets: []int64{2},
			Records: []broker.Record{
				{Topic: "t", Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("v"), Timestamp: base,
					Headers: []broker.Header{{Key: "h", Value: []byte("x")}, {Key: "n"}}},
				{Topic: "t", Partition: 0, Offset: 1, Key: nil, Value: []byte{}, Timestamp: base},
			}}}},
		Groups: map[string]map[string]map[int32]int64{"g": {"t": {0: 2}}},
	}
	var b bytes.Buffer
	if err := broker.WriteDump(&b, l); err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"header","format":"orderflow-audit/broker-dump","version":1}
{"kind":"partition","topic":"t","partition":0,"start":0,"end":3,"control_offsets":[2]}
{"kind":"record","topic":"t","partition":0,"offset":0,"timestamp_ms":1893553445678,"key":"aw==","value":"dg==","headers":[{"key":"h","value":"eA=="},{"key":"n","value":null}]}
{"kind":"record","topic":"t","partition":0,"offset":1,"timestamp_ms":1893553445678,"key":null,"value":""}
{"kind":"group_offset","group":"g","topic":"t","partition":0,"offset":2}
{"kind":"end","partitions":1,"records":2,"group_offsets":1}
`
	if b.String() != want {
		t.Errorf("WriteDump =\n%s\nwant\n%s", b.String(), want)
	}
}
