-- A returned row is a SENT outbox intent whose order does not exist: the
-- chain announced an order that was never committed. Seeded decoys
-- (aggregate_id -1) are excluded.
SELECT o.event_id
FROM outbox o
LEFT JOIN orders r ON r.id = o.aggregate_id
WHERE o.state = 'SENT'
  AND o.aggregate_id <> -1
  AND r.id IS NULL
