-- A returned row is a SENT outbox intent with no notification for its
-- event: the relay published it but no business effect was committed.
SELECT o.event_id
FROM outbox o
LEFT JOIN notification n ON n.event_id = o.event_id
WHERE o.state = 'SENT'
  AND n.id IS NULL
