-- MySQL/MariaDB only: the marker that says this scratch database was
-- created by orderflow-audit (as migrations/0001_marker.up.sql). The
-- verifier drops a database only when it carries this marker.
CREATE TABLE ofa_marker (
  id         TINYINT      NOT NULL PRIMARY KEY,
  tool       VARCHAR(64)  NOT NULL,
  run_id     VARCHAR(64)  NOT NULL,
  created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
);
