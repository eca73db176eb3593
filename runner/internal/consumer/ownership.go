package consumer

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The group's callbacks log which partitions this member owns: one
// partition_assigned, partition_revoked or partition_lost event per
// partition, in the member's own log, when kgo calls them (the group
// management goroutine; with BlockRebalanceOnPoll not while a polled batch
// is being settled). From them and the supervisor's process_exit of a
// member that died, the verifier derives how long each partition was
// without an owner and holds it to spec's bounds
// (partition-unowned-too-long). A failed write is not returned to kgo,
// which has no use for it: the log keeps its first error and the next
// event the member emits returns it.

// onAssigned logs the partitions newly assigned to this member.
func (c *Consumer) onAssigned(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	c.ownership(evidence.KindPartitionAssigned, parts, +1)
}

// onRevoked logs the partitions this member gave up.
func (c *Consumer) onRevoked(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	c.forget(parts)
	c.ownership(evidence.KindPartitionRevoked, parts, -1)
}

// onLost logs the partitions the group took from this member.
func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	c.forget(parts)
	c.ownership(evidence.KindPartitionLost, parts, -1)
}

// ownership emits kind for each partition of parts, topics and partitions
// in order, and moves Stats.Owned by sign per partition.
func (c *Consumer) ownership(kind evidence.Kind, parts map[string][]int32, sign int) {
	topics := make([]string, 0, len(parts))
	for t := range parts {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		ps := slices.Sorted(slices.Values(parts[t]))
		for _, p := range ps {
			c.count(func(s *Stats) { s.Owned = max(s.Owned+sign, 0) })
			_ = c.emit(evidence.Event{Kind: kind, Topic: t, Partition: evidence.Ptr(p), Consumer: c.cfg.Group})
		}
	}
}
