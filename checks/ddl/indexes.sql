-- Indexes for the anti-joins, created after the bulk load.
CREATE INDEX ix_orders_id ON orders (id);
CREATE INDEX ix_outbox_event ON outbox (event_id);
CREATE INDEX ix_outbox_aggregate ON outbox (aggregate_id);
CREATE INDEX ix_inbox_key ON inbox (consumer, event_id);
CREATE INDEX ix_notification_event ON notification (event_id, consumer);
CREATE INDEX ix_notification_order ON notification (order_id);
