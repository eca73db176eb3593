package relay

import (
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
