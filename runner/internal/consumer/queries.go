package consumer

// The consumer's SQL. Both inserts run in one transaction: the inbox row is
// the dedupe decision (primary key (consumer, event_id)), the notification
// the business effect.
const (
	qInsertInbox = `INSERT INTO inbox (consumer, event_id, topic, part, msg_offset) VALUES (?, ?, ?, ?, ?)`

	qInsertNotification = `INSERT INTO notification (consumer, event_id, order_id, body) VALUES (?, ?, ?, ?)`
)

// mysqlDuplicateKey is MySQL/MariaDB error 1062 (ER_DUP_ENTRY).
const mysqlDuplicateKey = 1062
