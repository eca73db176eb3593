package sut

import (
	"context"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Reference returns this project's order service, relay and consumer
// (runner/internal/...), which claim every feature.
func Reference() Implementation {
	return Implementation{
		Name:     spec.ReferenceSUT,
		Features: spec.AllFeatures,
		Source:   ReferenceSource,
		NewOrders: func(c OrdersConfig) (OrderService, error) {
			return orders.New(orders.Config{DB: c.DB, Secret: c.Secret, Log: c.Log, Actor: c.Name, Plant: c.Plant, Faults: c.Faults})
		},
		NewRelay: func(c RelayConfig) (Relay, error) {
			return relay.New(relay.Config{DB: c.DB, Client: c.Client, Topic: c.Topic, ClaimID: c.ClaimID, Lease: c.Lease,
				PublishTimeout: c.PublishTimeout, Batch: c.Batch, Now: c.Now, Log: c.Log, Actor: c.Name, Faults: c.Faults, Plant: c.Plant})
		},
		NewConsumer: func(ctx context.Context, c ConsumerConfig) (Consumer, error) {
			return consumer.New(ctx, consumer.Config{DB: c.DB, ClientOpts: c.ClientOpts, Topic: c.Topic, Group: c.Group,
				Name: c.Inbox, Member: c.Name, Log: c.Log, Faults: c.Faults, Plant: c.Plant, BatchEffects: c.Batch})
		},
	}
}
