package consumer_test

import (
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
)

// TestOwnershipLogged: a member logs the partition the group assigns it
// and gives it up when it closes; the next member of the group is then
// assigned it, after the first one's revoke, and Stats.Owned follows.
func TestOwnershipLogged(t *testing.T) {
	b := setup(t)
	b.produce(t, 1)
	c1 := b.consumer(t, "consumer-1", nil)
	st, err := c1.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.OffsetsCommitted >= 1 })
	if err != nil || st.Owned != 1 {
		t.Fatalf("consumer-1: %+v, %v; want 1 partition owned", st, err)
	}
	c1.Close()
	if s := c1.Stats(); s.Owned != 0 {
		t.Errorf("consumer-1 after Close owns %d partitions; want 0", s.Owned)
	}
	c2 := b.consumer(t, "consumer-2", nil)
	b.produce(t, 2)
	if st, err := c2.PollUntil(deadline(t, 15*time.Second), func(s consumer.Stats) bool { return s.Received >= 1 }); err != nil || st.Owned != 1 {
		t.Fatalf("consumer-2: %+v, %v; want 1 partition owned", st, err)
	}
	c2.Close()
	var got []string
	var revoked, assigned time.Time
	for _, e := range b.events(t) {
		switch e.Kind {
		case evidence.KindPartitionAssigned, evidence.KindPartitionRevoked, evidence.KindPartitionLost:
			if e.Topic != b.Topic || e.Partition == nil || *e.Partition != 0 || e.Consumer != b.group {
				t.Errorf("%s of %s: topic %q partition %v group %q; want %q 0 %q", e.Kind, e.Actor, e.Topic, e.Partition, e.Consumer, b.Topic, b.group)
			}
			got = append(got, e.Actor+" "+string(e.Kind))
			if e.Actor == "consumer-1" && e.Kind == evidence.KindPartitionRevoked {
				revoked = e.Time
			}
			if e.Actor == "consumer-2" && e.Kind == evidence.KindPartitionAssigned {
				assigned = e.Time
			}
		}
	}
	want := []string{"consumer-1 partition_assigned", "consumer-1 partition_revoked", "consumer-2 partition_assigned", "consumer-2 partition_revoked"}
	if len(got) != len(want) {
		t.Fatalf("ownership events %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ownership events %q; want %q", got, want)
		}
	}
	if !assigned.After(revoked) {
		t.Errorf("consumer-2 assigned at %v, not after consumer-1 revoked at %v", assigned, revoked)
	}
}
