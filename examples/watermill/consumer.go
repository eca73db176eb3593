package main

import (
	"context"
	stdsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/go-sql-driver/mysql"
)

// runConsumer is the notification consumer.
func runConsumer(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("consumer", `A Watermill Kafka subscriber (watermill-kafka, consumer group --group, from
the oldest offset when the group has none) behind a Watermill router. For
each OrderCreated record it writes, in one transaction, an inbox row
(consumer --name, event id = the message uuid; unique) and a notification;
a redelivered event finds its inbox row and writes nothing. The handler
returns, the router acks, and the Kafka offset is marked.

Example:
  watermill-example consumer --mysql-dsn 'root@tcp(127.0.0.1:3306)/shop' --brokers 127.0.0.1:9092 --topic orders --group notify`, stderr)
	var dbf dbFlags
	dbf.register(fs)
	var kf kafkaFlags
	kf.register(fs)
	group := fs.String("group", envOr("CONSUMER_GROUP", ""), "Kafka consumer `group` [CONSUMER_GROUP] (required)")
	name := fs.String("name", envOr("CONSUMER_NAME", "notifier"), "consumer `name` written in the inbox and notification rows [CONSUMER_NAME]")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	return exitCode(stderr, "consumer", consume(ctx, dbf, kf, *group, *name, newLogger(stderr, "consumer")))
}

func consume(ctx context.Context, dbf dbFlags, kf kafkaFlags, group, name string, log *slog.Logger) error {
	brokers, err := kf.check()
	if err != nil {
		return err
	}
	if group == "" || name == "" || len(name) > 64 {
		return fmt.Errorf("%w: --group is required, --name 1 to 64 characters", errUsage)
	}
	db, err := dbf.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	wlog := watermill.NewSlogLogger(log)
	saramaCfg := kafka.DefaultSaramaSubscriberConfig()
	// Watermill's default starts a new group at the newest offset; a
	// consumer that starts after the first records would never see them.
	saramaCfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	sub, err := kafka.NewSubscriber(kafka.SubscriberConfig{
		Brokers:               brokers,
		Unmarshaler:           kafka.DefaultMarshaler{},
		OverwriteSaramaConfig: saramaCfg,
		ConsumerGroup:         group,
	}, wlog)
	if err != nil {
		return fmt.Errorf("watermill-kafka subscriber: %w", err)
	}
	router, err := message.NewRouter(message.RouterConfig{}, wlog)
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	n := &notifier{db: db, name: name, log: log}
	router.AddConsumerHandler("notify", kf.topic, sub, n.handle)
	log.Info("consuming", "topic", kf.topic, "group", group, "name", name)
	if err := router.Run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("router stopped: %w", err)
	}
	return router.Close()
}

// notifier writes the inbox row and the notification of one event.
type notifier struct {
	db   *stdsql.DB
	name string
	log  *slog.Logger
}

// handle is the router's handler: nil acks the message, an error nacks it
// (watermill-kafka redelivers it after NackResendSleep).
func (n *notifier) handle(msg *message.Message) error {
	ctx := msg.Context()
	var ev orderCreated
	if msg.UUID == "" || json.Unmarshal(msg.Payload, &ev) != nil {
		// A record that is not an OrderCreated message can never be
		// handled; acking it keeps the partition moving, and the audit
		// sees the missing effect.
		n.log.Error("not an OrderCreated message; acked without effect", "uuid", msg.UUID)
		return nil
	}
	part, _ := kafka.MessagePartitionFromCtx(ctx)
	offset, _ := kafka.MessagePartitionOffsetFromCtx(ctx)
	tx, err := n.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, "INSERT INTO inbox (consumer, event_id, topic, part, msg_offset) VALUES (?, ?, ?, ?, ?)",
		n.name, msg.UUID, message.SubscribeTopicFromCtx(ctx), part, offset)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 {
		return nil // delivered before: its effect is committed already
	}
	if err != nil {
		return fmt.Errorf("insert inbox row of %s: %w", msg.UUID, err)
	}
	body := fmt.Sprintf("order %d: %d x %s", ev.OrderID, ev.Qty, ev.SKU)
	if _, err := tx.ExecContext(ctx, "INSERT INTO notification (consumer, event_id, order_id, body) VALUES (?, ?, ?, ?)",
		n.name, msg.UUID, ev.OrderID, body); err != nil {
		return fmt.Errorf("insert notification of %s: %w", msg.UUID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit effect of %s: %w", msg.UUID, err)
	}
	return nil
}
