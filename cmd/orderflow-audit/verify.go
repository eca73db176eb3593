package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/checks"
)

// cmdVerify re-derives every claim of an evidence file from its event logs
// (package checks) and prints the verdict. Exit 0 PASS, 1 FAIL, 2 bad input,
// 3 the --mysql-dsn server is unavailable, 4 INCONCLUSIVE.
func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify", "verify [flags] EVIDENCE",
		`Checks an evidence file without trusting whoever produced it: the file and
every event line against the JSON Schemas; its scenarios against those its
run.args selected (a boundary whose scenario did not run is unproven, so at
best INCONCLUSIVE); the logs' presence, place, sha256, line counts, seq
order, run id and actor, and their events' times (in order within a log,
within the run); a replay of the events through a model of the
outbox, relay and consumer (stale tokens, SENT without a publish, second
effects, offsets before effects, claims on live leases, intents outside the
order transaction); every metric, observation line, status and summary
recomputed; the invariant SQL files run on the replayed end state (an
embedded SQLite by default, so no server is needed) and compared with the
live results and table digests. A planted run (run --plant) must be caught
by the rule that exposes its bug. Prints PASS, FAIL or INCONCLUSIVE with
every reason. Exit 0 pass, 1 fail, 2 bad input, 3 --mysql-dsn server
unavailable, 4 inconclusive.`,
		`orderflow-audit verify evidence/u80.json
orderflow-audit verify --json evidence/u80.json
orderflow-audit verify --mysql-dsn 'root@tcp(127.0.0.1:3306)/' evidence/u80.json`)
	asJSON := fs.Bool("json", false, "print the verdict as JSON instead of text")
	dsn := fs.String("mysql-dsn", "", "run the invariants in a scratch database ofa_verify_<random> on this MySQL/MariaDB\nserver (dropped after) instead of the embedded SQLite")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return fail(stderr, "verify", usageErrorf("want exactly one evidence file, got %d arguments", fs.NArg()))
	}
	if *dsn != "" {
		if _, err := mysql.ParseDSN(*dsn); err != nil {
			return fail(stderr, "verify", usageErrorf("--mysql-dsn: %v", err))
		}
	}
	v, err := checks.Verify(ctx, fs.Arg(0), checks.Options{MySQLDSN: *dsn})
	if err != nil {
		return fail(stderr, "verify", err, *dsn)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fail(stderr, "verify", err)
		}
	} else if err := checks.WriteText(stdout, v); err != nil {
		return fail(stderr, "verify", err)
	}
	return verdictExit(v.Status)
}
