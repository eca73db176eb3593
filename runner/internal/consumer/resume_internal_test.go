package consumer

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestResumed: once a partition is rewound to offset 5, a poll that
// delivers it from a later offset (a fetch under way when it was rewound)
// does not get those records handled, and the partition is held to 5
// until a record at 5 comes; another partition is untouched, and a
// partition given up is no longer held.
func TestResumed(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c := &Consumer{cl: cl}
	rec := func(p int32, o int64) *kgo.Record { return &kgo.Record{Topic: "t", Partition: p, Offset: o} }
	offsets := func(rs []*kgo.Record) []int64 {
		var out []int64
		for _, r := range rs {
			out = append(out, int64(r.Partition)*100+r.Offset)
		}
		return out
	}
	if got := offsets(c.resumed([]*kgo.Record{rec(0, 7), rec(1, 3)})); !slices.Equal(got, []int64{7, 103}) {
		t.Fatalf("nothing rewound: handled %v; want every record", got)
	}
	c.rewind([]*kgo.Record{rec(0, 6), rec(0, 5), rec(0, 7)})
	for _, tc := range []struct {
		name string
		poll []*kgo.Record
		want []int64
	}{
		{"past the rewind", []*kgo.Record{rec(0, 7), rec(0, 8), rec(1, 4)}, []int64{104}},
		{"past it again", []*kgo.Record{rec(0, 6)}, nil},
		{"from the rewind", []*kgo.Record{rec(0, 5), rec(0, 6)}, []int64{5, 6}},
		{"on from there", []*kgo.Record{rec(0, 7)}, []int64{7}},
	} {
		if got := offsets(c.resumed(tc.poll)); !slices.Equal(got, tc.want) {
			t.Fatalf("%s: handled %v; want %v", tc.name, got, tc.want)
		}
	}
	c.rewind([]*kgo.Record{rec(1, 9)})
	c.forget(map[string][]int32{"t": {1}})
	if got := offsets(c.resumed([]*kgo.Record{rec(1, 12)})); !slices.Equal(got, []int64{112}) {
		t.Fatalf("a partition given up after its rewind: handled %v; want its records (the next owner starts at the commit)", got)
	}
}
