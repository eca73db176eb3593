// Command watermill-example is a small order pipeline built the way a Go
// team would build it with Watermill, so that orderflow-audit can audit a
// pipeline it did not write (profile.yaml; ../../docs/blackbox.md). One
// binary, one subcommand per process:
//
//   - service: an HTTP order service; POST /orders writes the order row and
//     publishes an OrderCreated message through watermill-sql's MySQL
//     publisher, wrapped by Watermill's forwarder publisher, in one
//     transaction;
//   - forwarder: Watermill's forwarder, from the SQL topic "outbox" to a
//     Kafka topic, records keyed by the order id;
//   - consumer: a Watermill Kafka subscriber in a consumer group that
//     writes an inbox row and a notification in one transaction, then acks.
//
// Three helpers serve the manual smoke run of README.md: topic (create the
// Kafka topic), load (concurrent POST /orders) and count (orders, records
// and inbox rows, and the orders that have no record); lockwatch prints the
// server's lock waits on the outbox table (profile-lockwatch.yaml).
//
// The Watermill code is used as its documentation shows; nothing here works
// around its behaviour, because its behaviour is what is audited.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand: it parses its own flags and returns the exit
// code (0 ok, 1 failed, 2 usage).
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists every subcommand, in the order the usage shows them.
var commands = []command{
	{"service", "the HTTP order service (orders row + Watermill SQL publish in one transaction)", runService},
	{"forwarder", "Watermill's forwarder: SQL topic \"outbox\" -> Kafka, keyed by order id", runForwarder},
	{"consumer", "a Watermill Kafka subscriber writing inbox + notification in one transaction", runConsumer},
	{"topic", "create the Kafka topic (smoke runs; the embedded broker creates none by itself)", runTopic},
	{"load", "send concurrent POST /orders to the service (smoke runs)", runLoad},
	{"count", "count orders, records on the topic and inbox rows; list orders without a record", runCount},
	{"busy", "a noisy neighbour: CPU-bound goroutines until stopped (the finding's busy host)", runBusy},
	{"lockwatch", "print the InnoDB lock waits on watermill_outbox (the finding's experiment)", runLockWatch},
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "watermill-example: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: watermill-example <command> [flags]\n\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'watermill-example <command> -h' for the flags and environment of a command.")
}
