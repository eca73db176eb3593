-- The consumer's side: one inbox row per (consumer, event) is the dedupe
-- decision, and one notification per event is the business effect. Both
-- are written in one transaction; a redelivered event hits the inbox's
-- primary key and writes no second notification. notification has no
-- unique key of its own: the inbox is the only guard, so a consumer that
-- skipped it would leave a duplicate the audit can see.
CREATE TABLE inbox (
  consumer    VARCHAR(64)  NOT NULL,
  event_id    VARCHAR(36)  NOT NULL,
  topic       VARCHAR(255) NOT NULL,
  part        INT          NOT NULL,
  msg_offset  BIGINT       NOT NULL,
  received_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (consumer, event_id)
);

CREATE TABLE notification (
  id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  consumer   VARCHAR(64)  NOT NULL,
  event_id   VARCHAR(36)  NOT NULL,
  order_id   BIGINT       NOT NULL,
  body       TEXT         NOT NULL,
  created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY idx_notification_event (event_id)
);
