package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// TestTypicalRunVolume measures reading the data directory of a run of the
// default suite's size: 18 scenario topics, 20 records each with headers,
// one group per topic with committed offsets.
func TestTypicalRunVolume(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts an embedded broker (skipped with -short)")
	}
	dir := filepath.Join(t.TempDir(), "kafka")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	for s := range 18 {
		topic := fmt.Sprintf("ofa.vol.s%02d", s)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		var rs []*kgo.Record
		for i := range 20 {
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i % 4)),
				Value:   []byte(fmt.Sprintf(`{"orderId":%d,"sku":"sku-1","quantity":1}`, i)),
				Headers: []kgo.RecordHeader{{Key: "event_id", Value: []byte(fmt.Sprint("e-", i))}, {Key: "claim_version", Value: []byte("1")}}})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		offs := kadm.Offsets{}
		offs.AddOffset(topic, 0, 20, -1)
		if err := adm.CommitAllOffsets(ctx, "notify-"+topic, offs); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	c.Close()

	var times []time.Duration
	for range 3 {
		start := time.Now()
		l, err := broker.ReadDataDir(t.Context(), dir, broker.Selection{Prefix: "ofa.vol."})
		times = append(times, time.Since(start))
		if err != nil {
			t.Fatalf("ReadDataDir: %v", err)
		}
		if len(l.Topics) != 18 || len(l.Groups) != 18 || len(l.Topics["ofa.vol.s17"][0].Records) != 20 {
			t.Fatalf("read %d topics, %d groups", len(l.Topics), len(l.Groups))
		}
	}
	slices.Sort(times)
	t.Logf("ReadDataDir of 18 topics x 20 records, 18 groups: min %v, median %v, max %v", times[0], times[1], times[2])
	if times[1] > 3*time.Second {
		t.Errorf("median %v; the broker witness must read well within the 5 s budget", times[1])
	}
}
