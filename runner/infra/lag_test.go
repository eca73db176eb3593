package infra_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

// TestCommitted: a group's committed offsets are summed over the topic's
// partitions (a partition without a commit counts 0), other topics and
// groups left out.
func TestCommitted(t *testing.T) {
	k, err := infra.StartKafka(t.Context(), infra.KafkaConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for _, topic := range []string{"t", "other"} {
		if err := k.CreateTopic(t.Context(), topic, 3); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	commit := func(group, topic string, p int32, at int64) {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
		if err := adm.CommitAllOffsets(t.Context(), group, os); err != nil {
			t.Fatal(err)
		}
	}
	commit("g", "t", 0, 4)
	commit("g", "t", 2, 3)
	commit("g", "other", 1, 7)
	commit("h", "t", 1, 9)
	for _, c := range []struct {
		group string
		want  int64
	}{{"g", 7}, {"h", 9}, {"nobody", 0}} {
		if got, err := k.Committed(t.Context(), c.group, "t"); err != nil || got != c.want {
			t.Errorf("Committed(%s, t) = %d, %v; want %d", c.group, got, err, c.want)
		}
	}
}
