package audit

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// A SQL load (load.sql): for a pipeline without an HTTP service, the
// audit's client is the writer. Each request runs the profile's
// statements, its {{names}} bound as parameters, in one transaction on a
// direct connection to the pipeline's database, and records what it
// learned of it, as Jepsen's client does:
//
//	ok       COMMIT answered OK
//	fail     an error before COMMIT was sent (BEGIN, a statement, a lost
//	         connection): the transaction cannot have committed
//	unknown  any error of COMMIT itself (a lost connection, a timeout, an
//	         error the server answered): the binlog settles it
//
// An error the server answers to COMMIT counts as unknown, not fail: the
// answer rule fails a committed row its client was told failed, and no
// such FAIL may rest on a reading of the server's error codes.

// sqlLoad is the load's statements, read, and the client's pool.
type sqlLoad struct {
	stmts []profile.SQLTemplate
	db    *sql.DB
}

// newSQLLoad reads the statements (the profile's loader has refused bad
// ones already) and opens a pool of concurrency connections to dsn, each
// read and write bounded by requestTimeout.
func newSQLLoad(spec *profile.SQLLoad, dsn string, concurrency int) (*sqlLoad, error) {
	sl := &sqlLoad{}
	for i, s := range spec.Statements {
		t, err := profile.ParseSQLTemplate(s)
		if err != nil {
			return nil, fmt.Errorf("%w: load.sql.statements[%d]: %v", ErrBadOptions, i, err)
		}
		sl.stmts = append(sl.stmts, t)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("load: the database's DSN: %w", err)
	}
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = requestTimeout, requestTimeout, requestTimeout
	if sl.db, err = sql.Open("mysql", cfg.FormatDSN()); err != nil {
		return nil, fmt.Errorf("load: open the database: %w", err)
	}
	sl.db.SetMaxOpenConns(concurrency)
	sl.db.SetMaxIdleConns(concurrency)
	return sl, nil
}

// bind returns each statement's arguments from v.
func (sl *sqlLoad) bind(v vars) ([][]any, error) {
	out := make([][]any, len(sl.stmts))
	for i, t := range sl.stmts {
		for _, name := range t.Names {
			val, ok := v[name]
			if !ok {
				return nil, fmt.Errorf("load.sql.statements[%d]: unknown template name {{%s}}", i, name)
			}
			out[i] = append(out[i], val)
		}
	}
	return out, nil
}

// exec runs one request's transaction. Every call is bounded by the
// connection's read and write timeouts rather than a context: a context
// cancelled while COMMIT is on the wire would make a failure of what
// may have committed.
func (sl *sqlLoad) exec(args [][]any) evidence.ClientOutcome {
	ctx := context.Background()
	tx, err := sl.db.BeginTx(ctx, nil)
	if err != nil {
		return evidence.ClientFailed
	}
	for i, t := range sl.stmts {
		if _, err := tx.ExecContext(ctx, t.Query, args[i]...); err != nil {
			_ = tx.Rollback()
			return evidence.ClientFailed
		}
	}
	if err := tx.Commit(); err != nil {
		return evidence.ClientUnknown
	}
	return evidence.ClientOK
}
