-- Watermill's own tables for the SQL topic "outbox", exactly as
-- watermill-sql v4.1.2 creates them (DefaultMySQLSchema and
-- DefaultMySQLOffsetsAdapter, SchemaInitializingQueries). They are created
-- here rather than left to Watermill because the service publishes inside
-- its business transaction, and watermill-sql refuses AutoInitializeSchema
-- on a transaction (a CREATE TABLE would commit it implicitly); the
-- forwarder still runs with InitializeSchema, whose CREATE TABLE IF NOT
-- EXISTS then finds them.
--
-- watermill_outbox holds one row per enveloped message: the payload is the
-- forwarder's envelope {"destination_topic", "uuid", "payload" (base64),
-- "metadata"}; `offset` is what the forwarder's cursor is compared with.
CREATE TABLE IF NOT EXISTS `watermill_outbox` (
`offset` BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
`uuid` VARCHAR(36) NOT NULL,
`created_at` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
`payload` JSON DEFAULT NULL,
`metadata` JSON DEFAULT NULL
);

-- The forwarder's cursor: one row per consumer group; the subscriber reads
-- rows with `offset` > offset_acked and sets offset_acked to the last one
-- it forwarded.
CREATE TABLE IF NOT EXISTS `watermill_offsets_outbox` (
consumer_group VARCHAR(255) NOT NULL,
offset_acked BIGINT,
offset_consumed BIGINT NOT NULL,
PRIMARY KEY(consumer_group)
);
