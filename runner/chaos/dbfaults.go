package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// The database's faults: a connection killed inside a transaction
// (conn-kill) and, through Database.Crash, kill -9 of the server
// (db-crash).

// killConnection kills the database connections of the target slot while
// its process is stopped inside a transaction (aimed: see aimsOf), by
// dropping them at its proxy: the server ends their sessions and rolls
// their transactions back, and the process, resumed, finds its connection
// dead in the middle of its transaction. When the process does not get
// there within the aim's window, the Database kills instead a connection
// of the pipeline's database that is inside a transaction, or else one
// running a statement (whoever holds it: the processlist does not say
// which process is behind a proxied connection). It says what it did.
func (r *run) killConnection(ctx context.Context, f nemesis.Fault) (string, error) {
	s := r.slot(f.Target)
	p, _, aimed, miss := r.aim(s, aimsOf[roleOf(s.name)])
	if aimed == "" {
		if p == nil {
			miss = " (" + f.Target + " had no running process)"
		}
		detail, err := r.t.Database.KillConnection(ctx)
		if detail != "" {
			detail += miss
		}
		return detail, err
	}
	l := r.t.Links.Link(f.Target + ">" + nemesis.TargetDatabase)
	l.Cut()
	err := l.Heal(ctx)
	if cerr := p.Signal(syscall.SIGCONT); cerr != nil && err == nil {
		err = fmt.Errorf("SIGCONT to pid %d: %w", p.Pid(), cerr)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s; its connections to the database were dropped at the proxy %s -> %s "+
		"(the server ends their sessions and rolls their transactions back), then SIGCONT", aimed, l.Addr, l.Upstream), nil
}

// Server is a MariaDB server as a Database: connections are killed with
// KILL CONNECTION, found in the processlist by their default database.
type Server struct {
	// DB is a connection to the server with the PROCESS privilege (it
	// sees every account's connections) and the right to kill them.
	DB *sql.DB
	// Schema is the pipeline's database: only its connections are
	// killed.
	Schema string
	// CrashFunc kills the server with SIGKILL and starts it again, and
	// says so; nil when the server is not the run's to kill.
	CrashFunc func(ctx context.Context) (string, error)
}

// connKillSearch is how long conn-kill looks for an open transaction.
const connKillSearch = 500 * time.Millisecond

// errNoSuchThread is the server's answer to a KILL of a connection that
// is gone (ER_NO_SUCH_THREAD, "Unknown thread id").
const errNoSuchThread = 1094

// KillConnection is conn-kill unaimed: KILL CONNECTION of a connection of
// the pipeline's database inside a transaction, or else of one running a
// statement.
func (sv Server) KillConnection(ctx context.Context) (string, error) {
	var id int64
	var command, state, info sql.NullString
	var age sql.NullInt64
	// Transactions last milliseconds: look for one for a little while.
	deadline := time.Now().Add(connKillSearch)
	for {
		err := sv.DB.QueryRowContext(ctx, `SELECT p.ID, p.COMMAND, p.STATE, p.INFO,
    TIMESTAMPDIFF(MICROSECOND, t.trx_started, NOW(6))
  FROM information_schema.PROCESSLIST p LEFT JOIN information_schema.INNODB_TRX t ON p.ID = t.trx_mysql_thread_id
  WHERE p.DB = ? AND p.ID <> CONNECTION_ID() AND (t.trx_id IS NOT NULL OR p.COMMAND <> 'Sleep')
  ORDER BY t.trx_id IS NULL, p.ID LIMIT 1`, sv.Schema).Scan(&id, &command, &state, &info, &age)
		if err == nil {
			_, err = sv.DB.ExecContext(ctx, "KILL CONNECTION "+fmt.Sprint(id))
			var me *mysql.MySQLError
			if err == nil {
				break
			}
			if !errors.As(err, &me) || me.Number != errNoSuchThread {
				return "", fmt.Errorf("kill connection %d: %w", id, err)
			}
			// It closed between the look-up and the KILL: look again.
		} else if err != sql.ErrNoRows {
			return "", fmt.Errorf("find a connection in a transaction: %w", err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", nil // no transaction open meanwhile: nothing to kill
		}
		time.Sleep(2 * time.Millisecond)
	}
	what := info.String
	if what == "" {
		what = "between statements"
	}
	trx := "running a statement (no InnoDB transaction listed for it)"
	if age.Valid {
		trx = fmt.Sprintf("in a transaction for %d µs", age.Int64)
	}
	return fmt.Sprintf("KILL CONNECTION %d, %s, command %s, state %q: %s",
		id, trx, command.String, state.String, clip(what, 200)), nil
}

// Crash kills the server with SIGKILL and starts it again on its data
// directory ("" without a CrashFunc).
func (sv Server) Crash(ctx context.Context) (string, error) {
	if sv.CrashFunc == nil {
		return "", nil
	}
	return sv.CrashFunc(ctx)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
