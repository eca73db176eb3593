// Command orderflow-audit audits a transactional outbox/inbox chain (order
// transaction, outbox relay, Kafka, consumer inbox and notification) and
// writes evidence that can be re-verified independently. See README.md.
package main

import (
	"context"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-sql-driver/mysql"
)

func main() {
	// The MySQL driver logs lost connections on its own; what matters of
	// them reaches the user through our errors.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	// With a handler for SIGPIPE, a write to a closed stdout (run | head)
	// returns EPIPE, which run treats as an interrupt, instead of killing
	// the process before it cleans up.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	go func() {
		for range pipes {
		}
	}()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(context.Background())
	go interrupts(sigs, cancel, os.Stderr, os.Exit)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(code)
}
