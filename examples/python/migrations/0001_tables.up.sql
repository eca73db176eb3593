-- A shop written in Python (pipeline.py), with its own names for
-- everything: the business table is `purchases`, the outbox is
-- `event_queue` (the relay deletes a row once Kafka has its record), the
-- inbox is `processed` and the effect is `emails`.

-- One row per accepted purchase; the request's key is unique, so a retried
-- request finds its purchase instead of making a second one. message_id is
-- the id of the PurchaseMade event written in the same transaction.
CREATE TABLE purchases (
  id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  request_key VARCHAR(128) NOT NULL,
  message_id  CHAR(36)     NOT NULL,
  item        VARCHAR(64)  NOT NULL,
  amount      INT          NOT NULL,
  note        VARCHAR(255) NOT NULL DEFAULT '',
  UNIQUE KEY uq_purchases_request_key (request_key),
  UNIQUE KEY uq_purchases_message_id (message_id)
);

-- The outbox. A row waits here until the relay has published it; the
-- relay deletes it in the transaction that claimed it (SKIP LOCKED), after
-- Kafka acknowledged the record. body is the event as JSON.
CREATE TABLE event_queue (
  seq        BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  message_id CHAR(36)     NOT NULL,
  stream_key VARCHAR(64)  NOT NULL,
  body       JSON         NOT NULL,
  queued_at  TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_event_queue_message_id (message_id)
);

-- The consumer's dedupe decision: one row per (handler, message); the
-- effect, one email per purchase, is written in the same transaction.
CREATE TABLE processed (
  handler    VARCHAR(64) NOT NULL,
  message_id CHAR(36)    NOT NULL,
  part       INT         NOT NULL,
  kafka_offset BIGINT    NOT NULL,
  PRIMARY KEY (handler, message_id)
);

CREATE TABLE emails (
  id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  handler     VARCHAR(64)  NOT NULL,
  message_id  CHAR(36)     NOT NULL,
  purchase_id BIGINT       NOT NULL,
  subject     VARCHAR(255) NOT NULL,
  KEY ix_emails_message (handler, message_id)
);
