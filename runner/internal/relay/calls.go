package relay

import (
	"database/sql"
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
)

// db runs the database call do at site through the call hook (the sweep
// fails it there; fault.Call).
func (r *Relay) db(site string, do func() error) error {
	return r.cfg.Faults.Call(fault.DB, site, do)
}

// broker runs the broker call do at site through the call hook.
func (r *Relay) broker(site string, do func() error) error {
	return r.cfg.Faults.Call(fault.Broker, site, do)
}

// commit commits tx through the call hook at site. A COMMIT that failed
// ended the transaction (the server rolled it back, or the connection is
// gone); so does one the hook failed before it was sent: tx is rolled
// back then, as the server would have.
func (r *Relay) commit(site string, tx *sql.Tx) error {
	err := r.db(site, tx.Commit)
	if err != nil {
		_ = tx.Rollback() // sql.ErrTxDone after a COMMIT that was sent
	}
	return err
}

// Errors a server sends when it ends a connection rather than answer a
// statement: ER_CONNECTION_KILLED (MariaDB's KILL) and ER_SERVER_SHUTDOWN.
const (
	mysqlConnectionKilled = 1927
	mysqlServerShutdown   = 1053
)

// outcomeUnknown tells whether a COMMIT's error leaves its outcome
// unknown: no answer from the server (a lost or killed connection, a
// context that ended while waiting) rather than an error it answered (a
// deadlock, a lock wait timeout: rolled back).
func outcomeUnknown(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == mysqlConnectionKilled || me.Number == mysqlServerShutdown
	}
	return true
}
