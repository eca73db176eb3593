package consumer

// The consumer's SQL. Both inserts run in one transaction: the inbox row is
// the dedupe decision (primary key (consumer, event_id)), the notification
// the business effect.
const (
	qInsertInbox = `INSERT INTO inbox (consumer, event_id, topic, part, msg_offset) VALUES (?, ?, ?, ?, ?)`

	qInsertNotification = `INSERT INTO notification (consumer, event_id, order_id, body) VALUES (?, ?, ?, ?)`

	// qInboxByEvent is the planted InboxByEventID's look-up: the event id
	// alone, not the consumer.
	qInboxByEvent = `SELECT COUNT(*) FROM inbox WHERE event_id = ?`

	// The batch's statements (batch.go): the VALUES lists are appended,
	// one (?, ...) per row; the ids of the notifications just inserted are
	// read back in the transaction (a multi-row insert's ids need not be
	// consecutive under innodb_autoinc_lock_mode 2).
	qInsertInboxRows        = `INSERT INTO inbox (consumer, event_id, topic, part, msg_offset) VALUES `
	qInsertNotificationRows = `INSERT INTO notification (consumer, event_id, order_id, body) VALUES `
	qNotificationIDs        = `SELECT id, event_id FROM notification WHERE id >= ? AND consumer = ? AND event_id IN `

	// qLastTrx reads the GTID of the session's last committed transaction
	// (MariaDB; empty without a binary log, an error on MySQL).
	qLastTrx = `SELECT @@last_gtid`
)

// mysqlDuplicateKey is MySQL/MariaDB error 1062 (ER_DUP_ENTRY).
const mysqlDuplicateKey = 1062

// Errors a server sends when it ends a connection rather than answer a
// statement: ER_CONNECTION_KILLED (MariaDB's KILL) and ER_SERVER_SHUTDOWN.
const (
	mysqlConnectionKilled = 1927
	mysqlServerShutdown   = 1053
)
