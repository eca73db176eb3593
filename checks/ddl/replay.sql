-- The replayed end state: only the columns that the invariant queries
-- (checks/sql/*.sql) and evidence.DigestSpecs read, with the names of the
-- live tables (migrations/*.sql). Portable to SQLite, MySQL and MariaDB.
-- No unique keys: a replayed history may hold the duplicates the
-- invariants exist to find.
CREATE TABLE stock (
  sku      VARCHAR(64) NOT NULL,
  quantity BIGINT      NOT NULL
);
CREATE TABLE orders (
  id           BIGINT       NOT NULL,
  sku          VARCHAR(64)  NOT NULL,
  quantity     BIGINT       NOT NULL,
  principal    VARCHAR(128) NULL,
  amount_cents BIGINT       NULL
);
CREATE TABLE order_lines (
  order_id    BIGINT      NOT NULL,
  sku         VARCHAR(64) NOT NULL,
  quantity    BIGINT      NOT NULL,
  price_cents BIGINT      NULL
);
CREATE TABLE idempotency_records (
  idem_key    VARCHAR(255) NOT NULL,
  order_id    BIGINT       NOT NULL,
  status_code INT          NOT NULL,
  principal   VARCHAR(128) NULL
);
CREATE TABLE outbox (
  event_id      VARCHAR(64) NOT NULL,
  aggregate_id  BIGINT      NOT NULL,
  state         VARCHAR(16) NOT NULL,
  claim_version BIGINT      NOT NULL,
  claim_id      VARCHAR(64) NULL
);
CREATE TABLE inbox (
  consumer VARCHAR(64) NOT NULL,
  event_id VARCHAR(64) NOT NULL
);
CREATE TABLE notification (
  id       BIGINT      NOT NULL,
  consumer VARCHAR(64) NOT NULL,
  event_id VARCHAR(64) NOT NULL,
  order_id BIGINT      NOT NULL
);
