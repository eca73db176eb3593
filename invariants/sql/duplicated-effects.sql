-- A returned row is an inbox consumer's event id with more than one
-- notification by that consumer: its business effect happened more than
-- once (one row per consumer and event id; one notification of an event
-- by each of two consumers is two effects, one each).
SELECT n.consumer, n.event_id
FROM notification n
GROUP BY n.consumer, n.event_id
HAVING COUNT(*) > 1
