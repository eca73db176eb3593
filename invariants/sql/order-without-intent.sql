-- A returned row is a committed order with no outbox intent e-<id>: the
-- order exists but nothing will ever announce it.
SELECT r.id
FROM orders r
LEFT JOIN outbox o ON o.event_id = CONCAT('e-', r.id)
WHERE o.event_id IS NULL
