package infra

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Committed returns the sum over topic's partitions of group's committed
// offsets, as the broker has them (a partition without a commit counts
// 0; a group the broker does not know has committed nothing): with
// EndOffset, a group's lag.
func (k *Kafka) Committed(ctx context.Context, group, topic string) (int64, error) {
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		return 0, fmt.Errorf("committed offsets of %s on %s: %w", group, topic, err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err == nil {
		err = offs.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("committed offsets of %s on %s: %w", group, topic, err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At > 0 {
			total += o.At
		}
	})
	return total, nil
}

// GroupMembers returns how many members the broker's coordinator counts
// in group and the group's state ("Stable", "PreparingRebalance",
// "CompletingRebalance", "Empty", ...): a scenario that makes a member
// join while another settles a batch waits for the join to reach the
// coordinator.
func (k *Kafka) GroupMembers(ctx context.Context, group string) (int, string, error) {
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		return 0, "", fmt.Errorf("describe group %s: %w", group, err)
	}
	defer cl.Close()
	gs, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	if err != nil {
		return 0, "", fmt.Errorf("describe group %s: %w", group, err)
	}
	g, ok := gs[group]
	if !ok {
		return 0, "", fmt.Errorf("describe group %s: not in the answer", group)
	}
	if g.Err != nil {
		return 0, "", fmt.Errorf("describe group %s: %w", group, g.Err)
	}
	return len(g.Members), g.State, nil
}
