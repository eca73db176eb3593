package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// The seeding statements. History rows are SENT intents of no order of
// the run (event ids h-<n>), with payloads of the size of the order
// service's, inserted by a recursive CTE of historyChunk rows at a time
// (MySQL's cte_max_recursion_depth is 1000 by default).
const (
	qSeedStock = `INSERT INTO stock (sku, quantity, price_cents) VALUES (?, ?, 100)`

	qSeedHistory = `INSERT INTO outbox
  (event_id, aggregate_id, aggregate_version, payload, state, claim_version, claim_id, lease_until, sent_at)
WITH RECURSIVE seq (n) AS (SELECT ? UNION ALL SELECT n + 1 FROM seq WHERE n < ?)
SELECT CONCAT('h-', n), n, 1,
       JSON_OBJECT('orderId', n, 'sku', 'history-sku', 'quantity', 1, 'amountCents', 100),
       'SENT', 1, 'bench-history', NOW(6) - INTERVAL 1 DAY, NOW(6) - INTERVAL 1 DAY
FROM seq`

	// qSeedPending writes PENDING intents e-<n> without their orders (a
	// relay-only bench), payloads as the order service writes them.
	qSeedPending = `INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state)
WITH RECURSIVE seq (n) AS (SELECT ? UNION ALL SELECT n + 1 FROM seq WHERE n < ?)
SELECT CONCAT('e-', n), n, 1,
       JSON_OBJECT('orderId', n, 'sku', CONCAT('bench-sku-', LPAD(n % 64, 2, '0')), 'quantity', 1, 'amountCents', 100),
       'PENDING'
FROM seq`

	qAnalyzeOutbox = `ANALYZE TABLE outbox`

	historyChunk   = 1000
	historyWorkers = 2
)

func skuName(i int) string { return fmt.Sprintf("bench-sku-%02d", i) }

// seed writes the stock (enough for both phases on every SKU) and history
// SENT rows into the outbox.
func (p *pipeline) seed(ctx context.Context, history int) error {
	for i := range skuCount {
		if _, err := p.db.ExecContext(ctx, qSeedStock, skuName(i), 2*p.opts.Events+1); err != nil {
			return fmt.Errorf("seed stock: %w", err)
		}
	}
	if history == 0 {
		return nil
	}
	if err := p.seedRows(ctx, qSeedHistory, "history", history); err != nil {
		return err
	}
	if _, err := p.db.ExecContext(ctx, qAnalyzeOutbox); err != nil {
		return fmt.Errorf("analyze outbox: %w", err)
	}
	return nil
}

// seedRows runs q (a recursive-CTE insert of rows from..to) over 1..n,
// historyChunk rows a statement, on historyWorkers connections.
func (p *pipeline) seedRows(ctx context.Context, q, what string, n int) error {
	chunks := make(chan int)
	errs := make([]error, historyWorkers)
	var wg sync.WaitGroup
	for w := range historyWorkers {
		wg.Go(func() {
			for from := range chunks {
				if errs[w] != nil {
					continue
				}
				to := min(from+historyChunk-1, n)
				if _, err := p.db.ExecContext(ctx, q, from, to); err != nil {
					errs[w] = fmt.Errorf("seed %s rows %d-%d: %w", what, from, to, err)
				}
			}
		})
	}
	for from := 1; from <= n; from += historyChunk {
		if from%100000 == 1 && from > 1 {
			fmt.Fprintf(p.opts.Progress, "bench: %s: %d of %d rows\n", what, from-1, n)
		}
		chunks <- from
	}
	close(chunks)
	wg.Wait()
	return errors.Join(errs...)
}
