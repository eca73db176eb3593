-- The order service's business table. One row per accepted order; the
-- Idempotency-Key header of the request that created it is unique, so a
-- retried request finds its order instead of creating a second one.
-- event_id is the uuid of the OrderCreated message published in the same
-- transaction (the audit's commit-atomic rule pairs the two by it).
CREATE TABLE orders (
  id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  idempotency_key VARCHAR(128) NOT NULL,
  event_id        VARCHAR(36)  NOT NULL,
  sku             VARCHAR(64)  NOT NULL,
  qty             INT          NOT NULL,
  note            VARCHAR(255) NOT NULL DEFAULT '',
  created_at      TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_orders_idempotency_key (idempotency_key),
  UNIQUE KEY uq_orders_event_id (event_id)
);
