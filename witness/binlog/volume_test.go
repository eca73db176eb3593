package binlog_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/internal/testserver"
)

// typicalRun writes what a default run writes, in volume: 18 scenario
// databases with the real DDL, and in each a seeded stock row and four
// orders through the whole chain (order transaction of five writes, claim,
// mark, inbox and notification): 18 x 17 = 306 transactions and 18 x 37 =
// 666 row changes besides the DDL. It returns the copied files.
func typicalRun(t testing.TB) []string {
	f := setup(t, testserver.Options{Args: []string{"--innodb-flush-log-at-trx-commit=2"}})
	from := f.position(t)
	for s := range 18 {
		db := f.schema(t, fmt.Sprintf("ofa_vol_s%02d", s))
		f.exec(t, db, "INSERT INTO stock (sku, quantity, price_cents) VALUES ('sku-1', 100, 250)")
		for o := 1; o <= 4; o++ {
			event := fmt.Sprint("e-", o)
			tx, err := db.BeginTx(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			f.exec(t, tx, "UPDATE stock SET quantity = quantity - 1 WHERE sku = 'sku-1' AND quantity >= 1")
			f.exec(t, tx, "INSERT INTO orders (id, principal, sku, quantity, amount_cents) VALUES (?, 'alice', 'sku-1', 1, 250)", o)
			f.exec(t, tx, "INSERT INTO order_lines (order_id, sku, quantity, price_cents) VALUES (?, 'sku-1', 1, 250)", o)
			f.exec(t, tx, `INSERT INTO idempotency_records (principal, idem_key, request_hash, status_code, response_body, order_id)
				VALUES ('alice', ?, REPEAT('a', 64), 201, '{}', ?)`, fmt.Sprint("k-", o), o)
			f.exec(t, tx, "INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload) VALUES (?, ?, 1, ?)",
				event, o, fmt.Sprintf(`{"orderId":%d,"sku":"sku-1","quantity":1}`, o))
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			f.exec(t, db, "UPDATE outbox SET state = 'CLAIMED', claim_version = 1, claim_id = 'c', lease_until = NOW(6) WHERE event_id = ?", event)
			f.exec(t, db, "UPDATE outbox SET state = 'SENT', sent_at = NOW(6) WHERE event_id = ? AND claim_version = 1", event)
			tx, err = db.BeginTx(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			f.exec(t, tx, "INSERT INTO inbox (consumer, event_id, topic, part, msg_offset) VALUES ('n', ?, 't', 0, ?)", event, o-1)
			f.exec(t, tx, "INSERT INTO notification (consumer, event_id, order_id, body) VALUES ('n', ?, ?, 'placed')", event, o)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return f.copyFrom(t, from)
}

// TestTypicalRunVolume measures reading the binlog of a run of the default
// suite's size; the whole verification must stay well under 5 s.
func TestTypicalRunVolume(t *testing.T) {
	files := typicalRun(t)
	var (
		times []time.Duration
		h     binlog.History
		err   error
	)
	for range 5 {
		start := time.Now()
		h, err = binlog.ReadAll(files)
		times = append(times, time.Since(start))
		if err != nil {
			t.Fatalf("ReadAll: %v", err)
		}
	}
	slices.Sort(times)
	var rows, size int
	for _, tx := range h.Transactions {
		rows += len(tx.Changes)
	}
	for _, fi := range h.Files {
		size += int(fi.Size)
	}
	if rows < 18*37 {
		t.Errorf("%d row changes; want at least %d", rows, 18*37)
	}
	t.Logf("read %d files, %d bytes: %d transactions, %d row changes; min %v, median %v, max %v",
		len(h.Files), size, len(h.Transactions), rows, times[0], times[2], times[4])
	if times[2] > 2*time.Second {
		t.Errorf("median read time %v; a run's binlog must read in well under the 5 s budget", times[2])
	}
}

func BenchmarkReadTypicalRun(b *testing.B) {
	files := typicalRun(b)
	for b.Loop() {
		if _, err := binlog.ReadAll(files); err != nil {
			b.Fatal(err)
		}
	}
}
