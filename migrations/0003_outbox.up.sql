-- The publish intent, written in the order transaction (PENDING), claimed by
-- a relay with a token (claim_version, claim_id) and a lease, marked SENT by
-- a compare-and-set on that token.
CREATE TABLE outbox (
  id                BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  event_id          VARCHAR(64)  NOT NULL,
  aggregate_id      BIGINT       NOT NULL,
  aggregate_version INT          NOT NULL,
  payload           JSON         NOT NULL,
  state             VARCHAR(16)  NOT NULL DEFAULT 'PENDING',
  claim_version     INT          NOT NULL DEFAULT 0,
  claim_id          VARCHAR(64)  NULL,
  lease_until       DATETIME(6)  NULL,
  created_at        TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  sent_at           DATETIME(6)  NULL,
  UNIQUE KEY uk_outbox_event (event_id),
  -- serves the claim query: WHERE state IN (...) AND lease_until ... ORDER BY id
  KEY idx_outbox_due (state, lease_until, id),
  CONSTRAINT ck_outbox_state CHECK (state IN ('PENDING', 'CLAIMED', 'SENT'))
);
