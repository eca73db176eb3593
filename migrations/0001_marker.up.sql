-- The marker says that this database was created by orderflow-audit for one
-- run. infra.DropScratch refuses to drop a database without it.
CREATE TABLE ofa_marker (
  id         TINYINT      NOT NULL PRIMARY KEY,
  tool       VARCHAR(64)  NOT NULL,
  run_id     VARCHAR(64)  NOT NULL,
  created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
);
