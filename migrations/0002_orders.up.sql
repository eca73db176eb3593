-- The order side (U79): stock, orders, their lines and idempotency records.
CREATE TABLE stock (
  sku         VARCHAR(64) NOT NULL PRIMARY KEY,
  quantity    INT         NOT NULL,
  price_cents BIGINT      NOT NULL DEFAULT 0,
  CONSTRAINT ck_stock_nonnegative CHECK (quantity >= 0)
);

CREATE TABLE orders (
  id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  principal    VARCHAR(128) NOT NULL,
  sku          VARCHAR(64)  NOT NULL,
  quantity     INT          NOT NULL,
  amount_cents BIGINT       NOT NULL,
  status       VARCHAR(16)  NOT NULL DEFAULT 'PLACED',
  created_at   TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
);

CREATE TABLE order_lines (
  id          BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
  order_id    BIGINT      NOT NULL,
  sku         VARCHAR(64) NOT NULL,
  quantity    INT         NOT NULL,
  price_cents BIGINT      NOT NULL,
  KEY idx_order_lines_order (order_id)
);

-- One record per (principal, key): the request fingerprint and the stored
-- answer that a replay of the same request gets back.
CREATE TABLE idempotency_records (
  id            BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  principal     VARCHAR(128) NOT NULL,
  idem_key      VARCHAR(255) NOT NULL,
  request_hash  CHAR(64)     NOT NULL,
  status_code   INT          NOT NULL,
  response_body TEXT         NOT NULL,
  order_id      BIGINT       NOT NULL,
  created_at    TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  UNIQUE KEY uk_idempotency_principal_key (principal, idem_key)
);
