package main

import (
	"context"
	stdsql "database/sql"
	"fmt"
	"io"
	"strings"
	"time"
)

// runLockWatch samples the server's InnoDB lock waits on Watermill's outbox
// table and prints each one once, for the experiment of
// ../../docs/findings/watermill-mysql-skipped-events.md
// (profile-lockwatch.yaml runs it as a fourth role). It only reads
// information_schema: it changes nothing the pipeline sees.
func runLockWatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("lockwatch", `Polls information_schema.INNODB_LOCK_WAITS (MariaDB) and prints one line per
lock wait on watermill_outbox the first time it is seen: the waiting
transaction's statement, the lock it asked for and the record that lock is
on (the outbox row's offset, or the supremum), and the blocking
transaction's statement and lock. A writer whose insert waits on a gap
lock below a row that is already there took its offset after that row's
writer took a higher one. Runs until it is stopped.

Example:
  watermill-example lockwatch --mysql-dsn 'root@tcp(127.0.0.1:3306)/shop' --every 150ms`, stderr)
	var dbf dbFlags
	dbf.register(fs)
	every := fs.Duration("every", 150*time.Millisecond, "the polling interval (InnoDB refreshes these tables only when they were not read for 100 ms)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	db, err := dbf.open(ctx)
	if err != nil {
		return exitCode(stderr, "lockwatch", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	fmt.Fprintf(stdout, "lockwatch: polling every %s; at start %s\n", *every, lockCounters(ctx, db))
	seen := map[string]bool{}
	var polls, waits int
	t := time.NewTicker(*every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(stdout, "lockwatch: %d polls, %d distinct lock waits; at the end %s\n", polls, waits, lockCounters(context.Background(), db))
			return 0
		case <-t.C:
		}
		polls++
		lines, err := lockWaits(ctx, db)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			fmt.Fprintf(stderr, "lockwatch: %v\n", err)
			continue
		}
		for _, l := range lines {
			if !seen[l.key] {
				seen[l.key] = true
				waits++
				fmt.Fprintf(stdout, "%s %s\n", time.Now().UTC().Format("15:04:05.000000"), l.text)
			}
		}
	}
}

// lockCounters reads the server's row lock counters (every wait counts,
// however short: a sample misses waits shorter than its interval).
func lockCounters(ctx context.Context, db *stdsql.DB) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_row_lock_waits', 'Innodb_row_lock_time', 'Innodb_deadlocks')")
	if err != nil {
		return "counters unread: " + err.Error()
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return "counters unread: " + err.Error()
		}
		parts = append(parts, name+"="+value)
	}
	return strings.Join(parts, " ")
}

type innodbWait struct{ key, text string }

// lockWaitsQuery joins each wait with its two transactions and locks.
const lockWaitsQuery = `SELECT rl.lock_table, w.requesting_trx_id, rl.lock_mode, rl.lock_type, COALESCE(rl.lock_index, ''), COALESCE(rl.lock_data, ''),
	COALESCE(rt.trx_query, ''), w.blocking_trx_id, bl.lock_mode, COALESCE(bl.lock_data, ''), COALESCE(bt.trx_query, ''), COALESCE(bt.trx_isolation_level, '')
FROM information_schema.INNODB_LOCK_WAITS w
JOIN information_schema.INNODB_LOCKS rl ON rl.lock_id = w.requested_lock_id
JOIN information_schema.INNODB_LOCKS bl ON bl.lock_id = w.blocking_lock_id
LEFT JOIN information_schema.INNODB_TRX rt ON rt.trx_id = w.requesting_trx_id
LEFT JOIN information_schema.INNODB_TRX bt ON bt.trx_id = w.blocking_trx_id`

func lockWaits(ctx context.Context, db *stdsql.DB) ([]innodbWait, error) {
	rows, err := db.QueryContext(ctx, lockWaitsQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []innodbWait
	for rows.Next() {
		var rtrx, btrx uint64
		var table, rmode, rtype, rindex, rdata, rquery, bmode, bdata, bquery, biso string
		if err := rows.Scan(&table, &rtrx, &rmode, &rtype, &rindex, &rdata, &rquery, &btrx, &bmode, &bdata, &bquery, &biso); err != nil {
			return nil, err
		}
		out = append(out, innodbWait{
			key: fmt.Sprintf("%d/%d/%s", rtrx, btrx, rdata),
			text: fmt.Sprintf("wait on %s: trx %d (%s) asks %s %s on %s record %q; held by trx %d (%s, %s) as %s on %q",
				table, rtrx, statement(rquery), rmode, rtype, rindex, rdata, btrx, biso, statement(bquery), bmode, bdata),
		})
	}
	return out, rows.Err()
}

// statement shortens a statement to its first words, on one line.
func statement(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if q == "" {
		return "no statement running"
	}
	if len(q) > 90 {
		q = q[:90] + "..."
	}
	return q
}
