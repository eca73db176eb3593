package runner

import (
	"context"
	"fmt"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
)

// topicN creates a fresh topic of this scenario with partitions
// partitions (Topic makes one).
func (e *Env) topicN(ctx context.Context, suffix string, partitions int32) (string, error) {
	name := "ofa." + e.RunID + "." + e.Scenario.ID
	if suffix != "" {
		name += "." + suffix
	}
	if err := e.Kafka.CreateTopic(ctx, name, partitions); err != nil {
		return "", err
	}
	e.mu.Lock()
	e.topics = append(e.topics, name)
	e.mu.Unlock()
	return name, nil
}

// placeN seeds stock 10 and places n committed orders keyed prefix-1..n.
func (e *Env) placeN(ctx context.Context, prefix string, n int) ([]*orders.PlaceResponse, error) {
	_, placed, err := e.placeOrders(ctx, prefix, n)
	return placed, err
}

// placeOrders is placeN that also returns the order service's client,
// for orders placed later.
func (e *Env) placeOrders(ctx context.Context, prefix string, n int) (*orders.Client, []*orders.PlaceResponse, error) {
	if err := e.SeedStock(ctx, defaultSKU, int64(max(10, n))); err != nil {
		return nil, nil, err
	}
	cl, err := e.Orders()
	if err != nil {
		return nil, nil, err
	}
	placed := make([]*orders.PlaceResponse, n)
	for i := range placed {
		if placed[i], err = e.placeCommitted(ctx, cl, fmt.Sprintf("%s-%d", prefix, i+1)); err != nil {
			return nil, nil, err
		}
	}
	return cl, placed, nil
}
