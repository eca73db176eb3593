package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

const cleanAbout = `Drops the scratch databases that runs no longer alive left on an external
server.

Drops the scratch databases (ofa_*) that runs no longer alive left on an
external server (a run's private server goes away with the run): a run killed outright (SIGKILL, a crash, a second Ctrl-C) or one that
lost its server cannot drop its own. Only databases that carry the
orderflow-audit marker are considered, and of those only the ones whose run
is not running: a live run holds a lock on the server (GET_LOCK
'ofa_run_<run id>') until it ends, and clean checks it again just before
each drop. Databases kept with 'run --keep' belong to finished runs and are
dropped too: use --dry-run to see first. Runs of versions without that lock
look finished: do not clean while one of them runs.

Prints one line per database: "dropped", "would drop" (--dry-run) or "in use"
(its run is alive). Exit 0, 1 when a drop failed, 3 when the server is
unreachable.`

// cleanListTimeout bounds the listing of the server's databases.
const cleanListTimeout = 30 * time.Second

func cmdClean(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("clean", "clean [flags]", cleanAbout,
		`orderflow-audit clean --dry-run
orderflow-audit clean --mysql-dsn 'root@tcp(127.0.0.1:3306)/'`)
	dryRun := fs.Bool("dry-run", false, "list what would be dropped, drop nothing")
	dsn := fs.String("mysql-dsn", "", "MySQL/MariaDB `DSN` of the external server to clean (env "+infra.EnvMySQLDSN+"; default "+infra.DefaultMySQLDSN+")")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, "clean", usageErrorf("unexpected argument %q", fs.Arg(0)))
	}
	cfg, err := infra.ResolveDSN(*dsn)
	if err != nil {
		return fail(stderr, "clean", usageErrorf("%v", err), *dsn)
	}
	server, err := infra.Connect(ctx, cfg)
	if err != nil {
		return fail(stderr, "clean", err, *dsn)
	}
	defer server.Close()
	lctx, cancel := context.WithTimeout(ctx, cleanListTimeout)
	defer cancel()
	ls, err := server.Leftovers(lctx)
	if err != nil {
		return fail(stderr, "clean", err, *dsn)
	}
	var dropped, failed, alive int
	for _, l := range ls {
		about := fmt.Sprintf("%s (run %s, created %s)", l.Name, l.RunID, l.Created.UTC().Format(time.RFC3339))
		switch {
		case l.Alive:
			alive++
			fmt.Fprintf(stdout, "in use      %s: its run is alive\n", about)
		case *dryRun:
			dropped++
			fmt.Fprintf(stdout, "would drop  %s\n", about)
		default:
			dctx, dcancel := infra.CleanupContext(ctx)
			err := server.DropLeftover(dctx, l)
			dcancel()
			if err != nil {
				failed++
				fmt.Fprintf(stderr, "%s clean: %s\n", progName, redactSecrets(err.Error(), *dsn))
				continue
			}
			dropped++
			fmt.Fprintf(stdout, "dropped     %s\n", about)
		}
	}
	verb := "dropped"
	if *dryRun {
		verb = "to drop"
	}
	fmt.Fprintf(stderr, "%d %s, %d in use by running runs, %d failed\n", dropped, verb, alive, failed)
	if failed > 0 {
		return exitFail
	}
	return exitOK
}
