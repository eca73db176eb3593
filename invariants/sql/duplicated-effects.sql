-- A returned row is an event id with more than one notification: the
-- business effect happened more than once (one row per event id).
SELECT n.event_id
FROM notification n
GROUP BY n.event_id
HAVING COUNT(*) > 1
