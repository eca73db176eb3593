-- A returned row is a SENT outbox intent with no notification for its
-- event by an inbox consumer: the relay published it but that consumer
-- committed no business effect. Each consumer that wrote an inbox row or
-- a notification is held to every SENT event (one row per event and
-- consumer); while no consumer wrote anything, a SENT event is one row.
SELECT o.event_id, c.consumer
FROM outbox o
CROSS JOIN (SELECT i.consumer FROM inbox i UNION SELECT m.consumer FROM notification m) c
LEFT JOIN notification n ON n.event_id = o.event_id AND n.consumer = c.consumer
WHERE o.state = 'SENT'
  AND n.id IS NULL
UNION ALL
SELECT o.event_id, NULL
FROM outbox o
WHERE o.state = 'SENT'
  AND NOT EXISTS (SELECT 1 FROM inbox)
  AND NOT EXISTS (SELECT 1 FROM notification)
