-- The consumer side: one inbox row per (consumer, event) is the dedupe
-- decision; one notification per business effect. notification has no unique
-- key of its own on purpose: the inbox is the only guard, so that a consumer
-- that skips it produces a duplicate the invariants can see.
CREATE TABLE inbox (
  consumer    VARCHAR(64)  NOT NULL,
  event_id    VARCHAR(64)  NOT NULL,
  topic       VARCHAR(255) NOT NULL,
  part        INT          NOT NULL,
  msg_offset  BIGINT       NOT NULL,
  received_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (consumer, event_id)
);

CREATE TABLE notification (
  id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  consumer   VARCHAR(64)  NOT NULL,
  event_id   VARCHAR(64)  NOT NULL,
  order_id   BIGINT       NOT NULL,
  body       TEXT         NOT NULL,
  created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY idx_notification_event (event_id),
  KEY idx_notification_order (order_id)
);
