package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/orderflow-audit/orderflow-audit/runner/bench"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

const benchAbout = `Measures the reference pipeline's throughput and latency in four phases
(placement, relays, consumers, end to end) and checks its own run.

Measures the reference pipeline (the order service, the relay and the
consumer) on a scratch database and a broker, in four phases of --events
orders each: placement alone (orders over HTTP by --clients clients), the
relays alone draining those intents into the topic, the consumers alone
applying the records, and end to end (another --events orders placed with the
relays and the consumers running: from the first placement to the last
effect, and each order's latency from its commit to its effect's commit).
--history puts that many SENT rows into the outbox first, as an outbox that
keeps its history has. The run checks itself: every event placed must be SENT
and have exactly one effect (and one inbox row); it says so, and exits 1
when not. Progress goes to stderr; the figures to stdout (--json: one object,
documented in README.md).

By default a private mariadbd is started for the run (no binary log, a 512 MB
buffer pool; removed at the end) and the embedded kfake broker; --mysql-dsn
(or ORDERFLOW_MYSQL_DSN) and --kafka-brokers use external ones, where the
run creates its own scratch database and topic and drops them at the end
unless --keep.`

// benchFlags are the flags of bench.
type benchFlags struct {
	opts    bench.Options
	dsn     string
	brokers string
	asJSON  bool
}

func benchFlagSet(bf *benchFlags) *flagSet {
	fs := newFlagSet("bench", "bench [flags]", benchAbout,
		`orderflow-audit bench
orderflow-audit bench --events 50000 --relays 4 --batch 500 --json
orderflow-audit bench --history 1000000 --mysql-dsn 'root@tcp(127.0.0.1:3306)/'`)
	o := &bf.opts
	fs.IntVar(&o.Events, "events", bench.DefaultEvents, "orders per phase (`n`; 2n in all)")
	fs.IntVar(&o.Relays, "relays", bench.DefaultRelays, "relays running at once")
	fs.IntVar(&o.Consumers, "consumers", bench.DefaultConsumers, "consumers in the group")
	fs.IntVar(&o.Batch, "batch", bench.DefaultBatch, "intents a relay claims, publishes and marks at a time")
	fs.IntVar(&o.Partitions, "partitions", bench.DefaultPartitions, "partitions of the topic")
	fs.IntVar(&o.History, "history", 0, "SENT rows already in the outbox before the first order")
	fs.IntVar(&o.Clients, "clients", bench.DefaultClients, "concurrent placement clients")
	fs.BoolVar(&o.RelayOnly, "relay-only", false, "run the relay phase alone, on intents written into the outbox by SQL\n(no orders, no consumers: what scripts/bench-peers.sh compares with a peer)")
	fs.BoolVar(&o.ConsumerPerRecord, "consumer-per-record", false, "the consumers settle each record in its own transaction and offset commit, as in\nthe scenarios (default: a polled batch in one transaction, per record on a failure)")
	fs.DurationVar(&o.Linger, "linger", 0, "the relays' producer linger (0: none)")
	fs.StringVar(&bf.dsn, "mysql-dsn", "", "external MySQL/MariaDB `DSN` (env "+infra.EnvMySQLDSN+"; default: a private mariadbd)")
	fs.StringVar(&bf.brokers, "kafka-brokers", "", "external Kafka brokers `host:port,...` (env "+infra.EnvKafkaBrokers+"; default: embedded kfake)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the scratch database (on an external server; a private one is removed),\nthe topic of an external broker, and the event logs")
	fs.StringVar(&o.LogDir, "log-dir", "", "write the actors' event logs under `dir`/<run id> and keep them (default: a temporary directory)")
	fs.BoolVar(&bf.asJSON, "json", false, "print one JSON object (README.md) instead of the text")
	return fs
}

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var bf benchFlags
	fs := benchFlagSet(&bf)
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, "bench", usageErrorf("unexpected argument %q", fs.Arg(0)))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := bf.resolve(set); err != nil {
		return fail(stderr, "bench", err, bf.dsn)
	}
	bf.opts.Progress = &syncWriter{w: stderr}
	res, err := bench.Run(ctx, bf.opts)
	if res != nil {
		if bf.asJSON {
			_ = writeJSON(stdout, res)
		} else {
			res.WriteText(stdout)
		}
	}
	switch {
	case errors.Is(err, bench.ErrCheckFailed):
		fmt.Fprintf(stderr, "%s bench: the run's own check failed: not every event has exactly one effect\n", progName)
		return exitFail
	case errors.Is(err, bench.ErrBadOptions):
		return fail(stderr, "bench", usageErrorf("%v", err), bf.dsn)
	}
	return fail(stderr, "bench", err, bf.dsn)
}

// resolve checks the options and resolves the external server and
// brokers (flags, then environment) without touching the network.
func (bf *benchFlags) resolve(set map[string]bool) error {
	o := &bf.opts
	for name, v := range map[string]int{"events": o.Events, "relays": o.Relays, "consumers": o.Consumers,
		"batch": o.Batch, "partitions": o.Partitions, "clients": o.Clients} {
		if v < 1 {
			return usageErrorf("--%s %d: want at least 1", name, v)
		}
	}
	cfg, err := infra.ExternalDSN(bf.dsn)
	if err != nil {
		return usageErrorf("%v", err)
	}
	bf.opts.MySQL = cfg
	brokers := bf.brokers
	if !set["kafka-brokers"] {
		brokers = os.Getenv(infra.EnvKafkaBrokers)
	}
	if brokers != "" {
		if _, err := splitList(brokers); err != nil {
			return usageErrorf("--kafka-brokers (or %s): %v", infra.EnvKafkaBrokers, err)
		}
	}
	bf.opts.Brokers = infra.ResolveBrokers(brokers)
	if err := bf.opts.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}
