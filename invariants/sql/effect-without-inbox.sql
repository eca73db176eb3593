-- A returned row is a notification with no inbox row for its (consumer,
-- event): an effect committed without the dedupe decision that must
-- guard it.
SELECT n.id
FROM notification n
LEFT JOIN inbox i ON i.consumer = n.consumer AND i.event_id = n.event_id
WHERE i.event_id IS NULL
