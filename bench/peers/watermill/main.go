// Command watermill-peer drains an outbox into Kafka with Watermill's SQL
// forwarder (github.com/ThreeDotsLabs/watermill components/forwarder,
// watermill-sql v4's MySQL subscriber, watermill-kafka v3's publisher), so
// that orderflow-audit's relay can be measured side by side with the
// library a Go team would pick instead (scripts/bench-peers.sh).
//
// It is a module of its own: orderflow-audit does not depend on Watermill.
//
// The outbox has the shape of orderflow-audit's: one intent per order, its
// payload the order service's JSON (about 100 bytes), keyed by the order
// id on the topic. Watermill keeps intents in its own table
// (watermill_<topic>: offset, uuid, payload, metadata) and the
// forwarder's progress in its offsets table; the intents are enveloped
// with the destination topic by forwarder.Publisher, as Watermill's
// outbox pattern does. The run:
//
//  1. creates a scratch database ofa_peer_watermill_<random> on the server
//     and a topic of --partitions partitions on the broker;
//  2. writes --events intents through forwarder.Publisher (not timed);
//  3. starts the forwarder and times it from its start until its offsets
//     table acknowledges the last intent (the moment the relay's mark
//     corresponds to); then checks that the topic holds every record;
//  4. drops the database and the topic.
//
// Usage:
//
//	watermill-peer --mysql-dsn 'root@tcp(127.0.0.1:3306)/' --kafka-brokers 127.0.0.1:9092 \
//	    [--events 20000] [--batch 100] [--poll 1s] [--interpolate] [--partitions 8] [--json]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"
)

// options are the flags.
type options struct {
	dsn, brokers string
	events       int
	batch        int
	poll         time.Duration
	interpolate  bool
	partitions   int
	asJSON       bool
}

// result is what one run measured (--json prints it).
type result struct {
	Peer              string  `json:"peer"`
	Events            int     `json:"events"`
	Batch             int     `json:"batch"`
	PollMS            float64 `json:"poll_ms"`
	InterpolateParams bool    `json:"interpolate_params"`
	Partitions        int     `json:"partitions"`
	Seconds           float64 `json:"seconds"`
	RelayEventsPerS   float64 `json:"relay_events_per_s"`
	Records           int64   `json:"records"`
	OK                bool    `json:"ok"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("watermill-peer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.dsn, "mysql-dsn", "", "MySQL/MariaDB `DSN` of the server (required; a scratch database is created on it)")
	fs.StringVar(&o.brokers, "kafka-brokers", "", "Kafka `host:port` (required)")
	fs.IntVar(&o.events, "events", 20000, "intents to drain")
	fs.IntVar(&o.batch, "batch", 0, "the subscriber's SubscribeBatchSize (0: Watermill's default, 100)")
	fs.DurationVar(&o.poll, "poll", 0, "the subscriber's PollInterval (0: Watermill's default, 1s)")
	fs.BoolVar(&o.interpolate, "interpolate", false, "interpolateParams=true on the connection (one round trip per statement)")
	fs.IntVar(&o.partitions, "partitions", 8, "partitions of the topic")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.dsn == "" || o.brokers == "" || o.events < 1 || o.batch < 0 || o.poll < 0 || o.partitions < 1 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "watermill-peer: --mysql-dsn and --kafka-brokers are required; --events and --partitions at least 1")
		return 2
	}
	res, err := drain(ctx, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "watermill-peer: %v\n", err)
		return 1
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else {
		fmt.Fprintf(stdout, "watermill forwarder (batch %d, poll %v, interpolateParams %v): %d events in %.2f s, %.0f events/s; %d records on the topic\n",
			res.Batch, time.Duration(res.PollMS*float64(time.Millisecond)), res.InterpolateParams, res.Events, res.Seconds,
			res.RelayEventsPerS, res.Records)
	}
	if !res.OK {
		fmt.Fprintf(stderr, "watermill-peer: %d records on the topic for %d intents\n", res.Records, res.Events)
		return 1
	}
	return 0
}
