-- A returned row is a notification whose order does not exist: an effect
-- for an order that was never committed.
SELECT n.id
FROM notification n
LEFT JOIN orders r ON r.id = n.order_id
WHERE r.id IS NULL
