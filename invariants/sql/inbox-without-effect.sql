-- A returned row is an inbox row with no notification: the dedupe decision
-- was recorded but its effect was lost, so every replay will be rejected
-- and the effect will never happen.
SELECT i.event_id
FROM inbox i
LEFT JOIN notification n ON n.consumer = i.consumer AND n.event_id = i.event_id
WHERE n.id IS NULL
