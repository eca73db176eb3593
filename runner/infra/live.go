package infra

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"
)

// A run announces that it is alive by holding a named lock on the server
// (GET_LOCK) for as long as it runs, on a connection of its own. The server
// releases the lock when that connection ends, so a run killed outright
// (SIGKILL, a crash, a lost machine) stops holding it at once. A scratch
// database whose marker names a run that holds no lock is a leftover:
// Leftovers finds them and `orderflow-audit clean` drops them.
//
// Runs of versions before this protocol hold no lock: their databases look
// dead to Leftovers even while they run.

// LockName is the name of the lock a live run holds: "ofa_run_<run id>",
// within the server's 64-character limit.
func LockName(runID string) string {
	n := "ofa_run_" + runID
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// Liveness is a held lock: the run (or, for a verification database, the
// database itself) is alive while it is held.
type Liveness struct {
	name string
	conn *sql.Conn
}

// HoldLock takes lock name on a connection of its own and keeps it until
// Release. It fails when someone else holds it.
func (s *Server) HoldLock(ctx context.Context, name string) (*Liveness, error) {
	lctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	conn, err := s.db.Conn(lctx)
	if err != nil {
		return nil, fmt.Errorf("%w: hold lock %s: %v", ErrUnavailable, name, redactErr(err, s.user))
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(lctx, `SELECT GET_LOCK(?, 0)`, name).Scan(&got); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: hold lock %s: %v", ErrUnavailable, name, redactErr(err, s.user))
	}
	if got.Int64 != 1 {
		conn.Close()
		return nil, fmt.Errorf("hold lock %s: another session holds it", name)
	}
	return &Liveness{name: name, conn: conn}, nil
}

// Release releases the lock (bounded by ProbeTimeout) and closes its
// connection; closing alone releases it too when the server cannot be
// reached.
func (l *Liveness) Release() {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
	defer cancel()
	_, _ = l.conn.ExecContext(ctx, `DO RELEASE_LOCK(?)`, l.name)
	l.conn.Close()
}

// Close closes the lock's connection without a word to the server (which
// releases the lock when it sees the connection end): for a server known
// lost.
func (l *Liveness) Close() {
	if l != nil {
		l.conn.Close()
	}
}

// Leftover is a scratch database on the server with our marker.
type Leftover struct {
	Name    string
	RunID   string
	Created time.Time
	// Alive: the run that made it (or the database's own lock, for the
	// verifier's databases) is held by a live session.
	Alive bool
}

// Leftovers lists the databases named ofa_* that carry our marker, with
// whether their run is alive, sorted by name. Databases without the marker
// (not ours) are not listed. ctx bounds the whole listing.
func (s *Server) Leftovers(ctx context.Context) ([]Leftover, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'ofa\_%'`)
	if err != nil {
		return nil, fmt.Errorf("%w: list databases on %s: %v", ErrUnavailable, s.Redacted(), redactErr(err, s.user))
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list databases: %w", err)
		}
		if scratchRE.MatchString(n) {
			names = append(names, n)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	sort.Strings(names)
	var out []Leftover
	for _, n := range names {
		l := Leftover{Name: n}
		var tool string
		err := s.db.QueryRowContext(ctx, "SELECT tool, run_id, created_at FROM `"+n+"`.ofa_marker WHERE id = 1").
			Scan(&tool, &l.RunID, &l.Created)
		switch {
		case ctx.Err() != nil:
			return out, fmt.Errorf("list databases: %w", ctx.Err())
		case err != nil || tool != "orderflow-audit":
			continue // not ours, or being created right now
		}
		var holders sql.NullInt64
		if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(IS_USED_LOCK(?), IS_USED_LOCK(?))`,
			LockName(l.RunID), n).Scan(&holders); err != nil {
			return out, fmt.Errorf("check whether run %s is alive: %w", l.RunID, err)
		}
		l.Alive = holders.Valid
		out = append(out, l)
	}
	return out, nil
}

// Dead returns the leftovers whose run is no longer alive.
func Dead(ls []Leftover) []Leftover {
	var out []Leftover
	for _, l := range ls {
		if !l.Alive {
			out = append(out, l)
		}
	}
	return out
}

// ErrAlive: Clean refuses a database whose run is alive.
var ErrAlive = errors.New("its run is alive")

// DropLeftover drops a leftover after checking again, on the server, that
// its run is not alive (and, through DropScratch, that it carries our
// marker).
func (s *Server) DropLeftover(ctx context.Context, l Leftover) error {
	var holders sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(IS_USED_LOCK(?), IS_USED_LOCK(?))`,
		LockName(l.RunID), l.Name).Scan(&holders); err != nil {
		return fmt.Errorf("drop %s: %w", l.Name, err)
	}
	if holders.Valid {
		return fmt.Errorf("drop %s: %w", l.Name, ErrAlive)
	}
	return s.DropScratch(ctx, l.Name)
}
