-- A returned row is a SENT outbox intent whose order does not exist: the
-- chain announced an order that was never committed (a seeded decoy,
-- aggregate_id -1, that got SENT counts too: it is exactly such an intent).
SELECT o.event_id
FROM outbox o
LEFT JOIN orders r ON r.id = o.aggregate_id
WHERE o.state = 'SENT'
  AND r.id IS NULL
