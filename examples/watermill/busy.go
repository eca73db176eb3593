package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"
)

// runBusy is a noisy neighbour: it keeps --threads CPU-bound goroutines
// running until it is stopped, as another service on a shared host would.
// The finding's loss needs a writer to be scheduled late between taking
// its auto-increment value and placing its row; a busy host is when that
// happens (docs/findings/watermill-mysql-skipped-events.md).
func runBusy(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("busy", `A noisy neighbour: --threads goroutines that spin on the CPU, each
busy --duty of every 10 ms, until stopped (SIGTERM, SIGINT).

Example:
  watermill-example busy --threads 2`, stderr)
	threads := fs.Int("threads", runtime.NumCPU(), "CPU-bound goroutines")
	duty := fs.Float64("duty", 1, "fraction of every 10 ms each goroutine spins (0 < duty <= 1)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *threads < 1 || *duty <= 0 || *duty > 1 {
		fmt.Fprintln(stderr, "busy: --threads must be at least 1 and --duty in (0, 1]")
		return 2
	}
	fmt.Fprintf(stdout, "busy: %d goroutine(s) at duty %.2f\n", *threads, *duty)
	spin := time.Duration(*duty * float64(10*time.Millisecond))
	var wg sync.WaitGroup
	for range *threads {
		wg.Go(func() {
			x := uint64(1)
			for ctx.Err() == nil {
				end := time.Now().Add(spin)
				for time.Now().Before(end) {
					for range 1000 {
						x = x*6364136223846793005 + 1442695040888963407
					}
				}
				if rest := 10*time.Millisecond - spin; rest > 0 {
					time.Sleep(rest)
				}
			}
			_ = x
		})
	}
	wg.Wait()
	return 0
}
