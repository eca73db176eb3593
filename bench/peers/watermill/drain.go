package main

import (
	"context"
	"crypto/rand"
	stdsql "database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/go-sql-driver/mysql"
)

// Names of the forwarder's SQL topic, its consumer group and the header
// carrying the partition key.
const (
	outboxTopic   = "outbox"
	consumerGroup = "forwarder"
	keyMetadata   = "aggregate_id"
	publishChunk  = 500
)

// drain runs one measurement (see the package documentation).
func drain(ctx context.Context, o options, progress io.Writer) (res result, err error) {
	res = result{Peer: "watermill", Events: o.events, Batch: o.batch, PollMS: float64(o.poll) / float64(time.Millisecond),
		InterpolateParams: o.interpolate, Partitions: o.partitions}
	id := randomHex(4)
	db, dropDB, err := scratchDB(ctx, o, "ofa_peer_watermill_"+id)
	if err != nil {
		return res, err
	}
	defer dropDB()
	topic := "ofa-peer-watermill-" + id
	dropTopic, err := createTopic(o, topic)
	if err != nil {
		return res, err
	}
	defer dropTopic()

	schema := wsql.DefaultMySQLSchema{SubscribeBatchSize: o.batch}
	if err := writeIntents(ctx, db, schema, topic, o.events); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "watermill-peer: %d intents in the outbox; forwarding to %s\n", o.events, topic)

	fwd, err := newForwarder(db, schema, o)
	if err != nil {
		return res, err
	}
	start := time.Now()
	runErr := make(chan error, 1)
	go func() { runErr <- fwd.Run(ctx) }()
	err = waitAcked(ctx, db, int64(o.events), runErr)
	elapsed := time.Since(start)
	_ = fwd.Close()
	if err != nil {
		return res, err
	}
	res.Seconds = elapsed.Seconds()
	res.RelayEventsPerS = float64(o.events) / elapsed.Seconds()
	if res.Records, err = records(o, topic); err != nil {
		return res, err
	}
	res.OK = res.Records >= int64(o.events)
	return res, nil
}

// scratchDB creates database name and opens it; drop drops it.
func scratchDB(ctx context.Context, o options, name string) (db *stdsql.DB, drop func(), err error) {
	cfg, err := mysql.ParseDSN(o.dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("--mysql-dsn: %w", err)
	}
	cfg.DBName = ""
	admin, err := stdsql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, nil, err
	}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		admin.Close()
		return nil, nil, fmt.Errorf("create database %s: %w", name, err)
	}
	dropDB := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = admin.ExecContext(dctx, "DROP DATABASE `"+name+"`")
		admin.Close()
	}
	cfg.DBName = name
	cfg.InterpolateParams = o.interpolate
	if db, err = stdsql.Open("mysql", cfg.FormatDSN()); err != nil {
		dropDB()
		return nil, nil, err
	}
	db.SetMaxIdleConns(16)
	return db, func() { db.Close(); dropDB() }, nil
}

// writeIntents writes n enveloped intents for the Kafka topic through
// Watermill's forwarder publisher, publishChunk per INSERT.
func writeIntents(ctx context.Context, db *stdsql.DB, schema wsql.SchemaAdapter, topic string, n int) error {
	pub, err := wsql.NewPublisher(wsql.BeginnerFromStdSQL(db), wsql.PublisherConfig{SchemaAdapter: schema, AutoInitializeSchema: true}, nil)
	if err != nil {
		return err
	}
	fpub := forwarder.NewPublisher(pub, forwarder.PublisherConfig{ForwarderTopic: outboxTopic})
	for from := 1; from <= n; from += publishChunk {
		var msgs []*message.Message
		for i := from; i < from+publishChunk && i <= n; i++ {
			payload := fmt.Sprintf(`{"orderId":%d,"sku":"bench-sku-%02d","quantity":1,"amountCents":100}`, i, i%64)
			m := message.NewMessage("e-"+strconv.Itoa(i), []byte(payload))
			m.Metadata.Set(keyMetadata, strconv.Itoa(i))
			m.SetContext(ctx)
			msgs = append(msgs, m)
		}
		if err := fpub.Publish(topic, msgs...); err != nil {
			return fmt.Errorf("write intents: %w", err)
		}
	}
	return nil
}

// newForwarder is Watermill's forwarder from the SQL topic to Kafka, the
// records keyed by the intent's aggregate id.
func newForwarder(db *stdsql.DB, schema wsql.SchemaAdapter, o options) (*forwarder.Forwarder, error) {
	logger := watermill.NopLogger{}
	sub, err := wsql.NewSubscriber(wsql.BeginnerFromStdSQL(db), wsql.SubscriberConfig{
		ConsumerGroup: consumerGroup, SchemaAdapter: schema, OffsetsAdapter: wsql.DefaultMySQLOffsetsAdapter{},
		InitializeSchema: true, PollInterval: o.poll,
	}, logger)
	if err != nil {
		return nil, err
	}
	pub, err := kafka.NewPublisher(kafka.PublisherConfig{
		Brokers: strings.Split(o.brokers, ","),
		Marshaler: kafka.NewWithPartitioningMarshaler(func(_ string, m *message.Message) (string, error) {
			return m.Metadata.Get(keyMetadata), nil
		}),
	}, logger)
	if err != nil {
		return nil, err
	}
	return forwarder.NewForwarder(sub, pub, logger, forwarder.Config{ForwarderTopic: outboxTopic})
}

// waitAcked polls the forwarder's offsets table until it acknowledges
// offset n (the last intent: offsets run 1..n).
func waitAcked(ctx context.Context, db *stdsql.DB, n int64, runErr <-chan error) error {
	q := "SELECT COALESCE(MAX(offset_acked), 0) FROM `watermill_offsets_" + outboxTopic + "` WHERE consumer_group = ?"
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var acked int64
		err := db.QueryRowContext(ctx, q, consumerGroup).Scan(&acked)
		if err == nil && acked >= n {
			return nil
		}
		if err != nil && !strings.Contains(err.Error(), "doesn't exist") {
			return fmt.Errorf("read the forwarder's offset: %w", err)
		}
		select {
		case err := <-runErr:
			return fmt.Errorf("forwarder stopped at offset %d of %d: %v", acked, n, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("forwarder at offset %d of %d after 10 minutes", acked, n)
		}
	}
}

func kafkaAdmin(o options) (sarama.ClusterAdmin, error) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	return sarama.NewClusterAdmin(strings.Split(o.brokers, ","), cfg)
}

// createTopic creates topic; drop deletes it.
func createTopic(o options, topic string) (drop func(), err error) {
	adm, err := kafkaAdmin(o)
	if err != nil {
		return nil, fmt.Errorf("kafka admin: %w", err)
	}
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: int32(o.partitions), ReplicationFactor: 1}, false); err != nil {
		adm.Close()
		return nil, fmt.Errorf("create topic %s: %w", topic, err)
	}
	return func() { _ = adm.DeleteTopic(topic); adm.Close() }, nil
}

// records sums the end offsets of topic's partitions.
func records(o options, topic string) (int64, error) {
	cl, err := sarama.NewClient(strings.Split(o.brokers, ","), sarama.NewConfig())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	parts, err := cl.Partitions(topic)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, p := range parts {
		off, err := cl.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return 0, err
		}
		n += off
	}
	return n, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
