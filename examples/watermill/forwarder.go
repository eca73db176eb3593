package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
)

// runForwarder is Watermill's forwarder from the SQL topic to Kafka.
func runForwarder(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("forwarder", `Watermill's forwarder (components/forwarder): a watermill-sql subscriber on
the SQL topic "outbox" (table watermill_outbox, default MySQL schema and
offsets adapter, its cursor in watermill_offsets_outbox under the consumer
group --group) feeding a watermill-kafka publisher. Each enveloped message
is published to the topic its envelope names, keyed by its aggregate_id
metadata (the order id); the cursor moves once Kafka acknowledged it.

Example:
  watermill-example forwarder --mysql-dsn 'root@tcp(127.0.0.1:3306)/shop' --brokers 127.0.0.1:9092`, stderr)
	var dbf dbFlags
	dbf.register(fs)
	var brokers string
	fs.StringVar(&brokers, "brokers", envOr("KAFKA_BROKERS", ""), "Kafka `host:port` list, comma separated [KAFKA_BROKERS] (required)")
	group := fs.String("group", envOr("FORWARDER_GROUP", "forwarder"), "consumer `group` of the SQL subscriber, the key of its cursor row [FORWARDER_GROUP]")
	poll := fs.Duration("poll", 0, "the SQL subscriber's PollInterval (0: Watermill's default, 1s)")
	batch := fs.Int("batch", 0, "the schema's SubscribeBatchSize (0: Watermill's default, 100)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	return exitCode(stderr, "forwarder", forward(ctx, dbf, brokers, *group, *poll, *batch, newLogger(stderr, "forwarder")))
}

// forward runs the forwarder until ctx is done. The Kafka topic is not a
// setting: each envelope names its own.
func forward(ctx context.Context, dbf dbFlags, brokerFlag, group string, poll time.Duration, batch int, log *slog.Logger) error {
	brokers, err := brokerList(brokerFlag)
	if err != nil {
		return err
	}
	if poll < 0 || batch < 0 {
		return fmt.Errorf("%w: --poll and --batch must not be negative", errUsage)
	}
	db, err := dbf.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	wlog := watermill.NewSlogLogger(log)
	sub, err := wsql.NewSubscriber(wsql.BeginnerFromStdSQL(db), wsql.SubscriberConfig{
		ConsumerGroup:    group,
		SchemaAdapter:    wsql.DefaultMySQLSchema{SubscribeBatchSize: batch},
		OffsetsAdapter:   wsql.DefaultMySQLOffsetsAdapter{},
		InitializeSchema: true,
		PollInterval:     poll,
	}, wlog)
	if err != nil {
		return fmt.Errorf("watermill-sql subscriber: %w", err)
	}
	pub, err := kafka.NewPublisher(kafka.PublisherConfig{
		Brokers: brokers,
		Marshaler: kafka.NewWithPartitioningMarshaler(func(_ string, m *message.Message) (string, error) {
			return m.Metadata.Get(aggregateKey), nil
		}),
	}, wlog)
	if err != nil {
		return fmt.Errorf("watermill-kafka publisher: %w", err)
	}
	defer pub.Close()
	fwd, err := forwarder.NewForwarder(sub, pub, wlog, forwarder.Config{ForwarderTopic: outboxTopic})
	if err != nil {
		return fmt.Errorf("forwarder: %w", err)
	}
	log.Info("forwarding", "sql_topic", outboxTopic, "group", group, "brokers", brokerFlag)
	if err := fwd.Run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("forwarder stopped: %w", err)
	}
	return fwd.Close()
}
