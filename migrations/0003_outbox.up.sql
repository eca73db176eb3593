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
  -- The database clock at the row's last change, set by the server on
  -- every update: the binlog shows a claim's lease_until beside the time
  -- of that claim, so a lease taken from any clock but the database's
  -- (lease_until = NOW(6) + the lease, in the claim's own statement) shows.
  changed_at        DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  UNIQUE KEY uk_outbox_event (event_id),
  -- serves the claim query: WHERE state IN (...) AND lease_until ... ORDER BY id
  KEY idx_outbox_due (state, lease_until, id),
  -- serves the claim's lookup of an intent's earlier versions: a relay
  -- claims an intent only when no earlier version of its aggregate is
  -- unsent (runner/internal/relay/queries.go, inVersionOrder)
  KEY idx_outbox_aggregate (aggregate_id, aggregate_version, state),
  CONSTRAINT ck_outbox_state CHECK (state IN ('PENDING', 'CLAIMED', 'SENT'))
);
