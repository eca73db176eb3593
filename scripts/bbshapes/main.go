// Command bbshapes builds the black-box fixtures from real servers: for
// each of four pipeline shapes other than ours (a cursor relay, a
// completed-at relay, a delete relay, a Debezium-convention table) it runs
// tiny pipelines made here, outside the tool (plain SQL and plain kgo
// records, pipeline.go), against a private MariaDB with the binlog on and
// an embedded broker (kfake) persisting to disk, one fresh binlog and one
// fresh broker per history. It captures the witnesses of each history and
// writes a black-box bundle (DIR/<shape>-<history>/audit.json) with the
// shape's profile, and expect.json: the verdict and the rules that are
// not PASS, as cases.go states them. It verifies every bundle and fails
// when a verdict is not the one stated.
//
//	go run ./scripts/bbshapes [-o checks/bbverify/testdata/shapes] [-run REGEXP]
//
// checks/bbverify's TestShapes verifies the committed bundles.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
)

func main() {
	out := flag.String("o", "checks/bbverify/testdata/shapes", "the `directory` of the bundles")
	only := flag.String("run", "", "only the histories whose <shape>-<history> matches `REGEXP`")
	bulk := flag.Int("bulk", 0, "instead: write one legal cursor-shape bundle of `N` events (with effects) to -o, for BENCHMARKS.md")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *only, *bulk); err != nil {
		fmt.Fprintln(os.Stderr, "bbshapes:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, only string, bulk int) error {
	re, err := regexp.Compile(only)
	if err != nil {
		return err
	}
	var args []string
	if bulk > 0 {
		// The bundle gate reads no file over 128 MiB: binlog files of 64 MiB.
		args = append(args, "--max-binlog-size=64M")
	}
	srv, err := startServer(ctx, args...)
	if err != nil {
		return err
	}
	defer srv.close()
	if bulk > 0 {
		return srv.bulk(ctx, out, bulk)
	}
	bad := 0
	for _, h := range histories() {
		id := h.shape.name + "-" + h.name
		if !re.MatchString(id) {
			continue
		}
		got, err := srv.record(ctx, out, h)
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		mark := "ok"
		if got != "" {
			mark, bad = "MISMATCH: "+got, bad+1
		}
		fmt.Printf("%-40s %-13s %s\n", id, h.want, mark)
	}
	if bad > 0 {
		return fmt.Errorf("%d histories did not get the verdict stated", bad)
	}
	return nil
}
