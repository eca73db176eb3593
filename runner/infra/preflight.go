package infra

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// ErrPrivileges marks a server account that lacks privileges the
// scenarios need (CheckPrivileges); such an error also wraps
// ErrUnavailable (exit 3): the infrastructure, not the system under test,
// is at fault.
var ErrPrivileges = errors.New("the server account lacks privileges the scenarios need")

// ScratchGrant is the grant that gives an account what the scenarios do
// inside their scratch databases; ProcessGrant the one they need beyond.
const (
	ScratchGrant = "GRANT CREATE, DROP, SELECT, INSERT, UPDATE, DELETE, TRIGGER ON `ofa\\_%`.* TO <account>"
	ProcessGrant = "GRANT PROCESS ON *.* TO <account>"
)

// Needs are the privileges a selection of scenarios needs beyond what
// every scenario does in its scratch database (create and drop it, create
// its tables, read and write their rows).
type Needs struct {
	// Trigger: a scenario creates a trigger (effectDbError); with the
	// binary log on, MariaDB and MySQL want SUPER for it too, unless
	// log_bin_trust_function_creators is on.
	Trigger bool
	// Process: a scenario finds the connection of an open transaction in
	// information_schema.INNODB_TRX (PROCESS) and kills it with KILL
	// CONNECTION (effectDbError, chaos).
	Process bool
	// For names who needs the privileges in the message (default "the
	// scenarios", which then says that no scenario was run).
	For string
}

// privilegeStep is one thing a run does on the server, tried by
// CheckPrivileges: the privilege it needs, who needs it, the statement
// that shows it, and whether every selection needs it.
type privilegeStep struct {
	privilege, why, stmt string
	inScratch            bool // runs in the preflight's scratch database
	needed               func(Needs) bool
}

func always(Needs) bool         { return true }
func needsTrigger(n Needs) bool { return n.Trigger }
func needsProcess(n Needs) bool { return n.Process }

// privilegeSteps are what the scenarios do that an account may be refused
// (the scratch databases' life, the migrations, the relay's and the
// consumer's statements, effectDbError's trigger, the look-ups of open
// transactions by effectDbError and chaos before their KILL CONNECTION).
var privilegeSteps = []privilegeStep{
	{"CREATE (tables)", "the migrations", "CREATE TABLE ofa_preflight (id BIGINT PRIMARY KEY, v INT NOT NULL, KEY v (v))", true, always},
	{"INSERT", "every scenario", "INSERT INTO ofa_preflight (id, v) VALUES (1, 1)", true, always},
	{"SELECT", "every scenario", "SELECT v FROM ofa_preflight WHERE id = 1", true, always},
	{"UPDATE", "the relay's claims (SELECT ... FOR UPDATE, UPDATE)", "UPDATE ofa_preflight SET v = 2 WHERE id = 1", true, always},
	{"DELETE", "the scenarios' clean-ups", "DELETE FROM ofa_preflight WHERE id = 1", true, always},
	{"TRIGGER", "effectDbError (a trigger refuses one effect insert)",
		"CREATE TRIGGER ofa_preflight_bi BEFORE INSERT ON ofa_preflight FOR EACH ROW SET NEW.v = NEW.v", true, needsTrigger},
	{"TRIGGER", "effectDbError (drops its trigger)", "DROP TRIGGER IF EXISTS ofa_preflight_bi", true, needsTrigger},
	{"PROCESS ON *.*", "effectDbError and chaos (information_schema.INNODB_TRX finds the connection to KILL)",
		"SELECT COUNT(*) FROM information_schema.INNODB_TRX", false, needsProcess},
}

// CheckPrivileges tries, before any scenario runs, what the scenarios do
// on the server, in a scratch database name of its own that it drops
// again: create and drop a database, the statements of privilegeSteps
// that every selection or needs asks for, and (with needs.Process) KILL
// CONNECTION of another connection of the same account. It
// returns nil when the account may do all of it; an error wrapping
// ErrPrivileges and ErrUnavailable that names every privilege missing,
// with the server's refusal and the grants that fix it; or an error
// wrapping ErrUnavailable when the server could not be asked. ctx bounds
// it.
func (s *Server) CheckPrivileges(ctx context.Context, name string, needs Needs) error {
	if !scratchRE.MatchString(name) || len(name) > 64 {
		return fmt.Errorf("check privileges in %q: %w", name, ErrBadName)
	}
	var missing []string
	refused := func(privilege, why, stmt string, err error) (bool, error) {
		var me *mysql.MySQLError
		if !errors.As(err, &me) || !accessDenied(me.Number) {
			return false, unavailablef("check the account's privileges: %s: %v", firstLine(stmt), redactErr(err, s.user))
		}
		if me.Number == 1419 { // ER_BINLOG_CREATE_ROUTINE_NEED_SUPER
			privilege += " and, with the binary log on, SUPER (or log_bin_trust_function_creators=ON)"
		}
		missing = append(missing, fmt.Sprintf("%s, for %s (%s: %s)", privilege, why, firstLine(stmt), me.Message))
		return true, nil
	}
	if _, err := s.db.ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		if _, err := refused("CREATE ON `ofa\\_%`.*", "the scratch database of every scenario", "CREATE DATABASE "+name, err); err != nil {
			return err
		}
		missing = append(missing, "and every privilege inside the scratch databases, which cannot be tried without one: "+ScratchGrant)
	} else {
		err := s.tryInScratch(ctx, name, needs, refused)
		if _, derr := s.db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); derr != nil {
			if _, rerr := refused("DROP ON `ofa\\_%`.*", "dropping the scratch databases", "DROP DATABASE "+name, derr); rerr != nil {
				return errors.Join(err, rerr)
			}
			missing[len(missing)-1] += " (" + name + " is left on the server: drop it with an account that may)"
		}
		if err != nil {
			return err
		}
	}
	for _, st := range privilegeSteps {
		if st.inScratch || !st.needed(needs) {
			continue
		}
		if _, err := s.db.ExecContext(ctx, st.stmt); err != nil {
			if _, err := refused(st.privilege, st.why, st.stmt, err); err != nil {
				return err
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var account string
	_ = s.db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&account)
	who := "the scenarios need, so no scenario was run"
	if needs.For != "" {
		who = needs.For + " needs"
	}
	return &unavailable{&marked{fmt.Errorf("the account %s at %s lacks %d privilege(s) %s: %s; "+
		"grant them (%s; %s) or use an account that has them",
		account, s.cfg.Addr, len(missing), who, strings.Join(missing, "; "), ScratchGrant, ProcessGrant), ErrPrivileges}}
}

// tryInScratch runs the in-scratch privilegeSteps that needs asks for and
// (needs.Process) a KILL CONNECTION of the account's own other connection
// in database name, on connections of their own (the killed one is never
// returned to a pool that others use).
func (s *Server) tryInScratch(ctx context.Context, name string, needs Needs, refused func(privilege, why, stmt string, err error) (bool, error)) error {
	db, err := sql.Open("mysql", s.ConfigFor(name).FormatDSN())
	if err != nil {
		return unavailablef("check the account's privileges: open %s: %v", name, err)
	}
	defer db.Close()
	created := true
	for _, st := range privilegeSteps {
		if !st.inScratch || !st.needed(needs) || (!created && st.privilege != "CREATE (tables)") {
			continue
		}
		if _, err := db.ExecContext(ctx, st.stmt); err != nil {
			denied, err := refused(st.privilege, st.why, st.stmt, err)
			if err != nil {
				return err
			}
			if denied && st.privilege == "CREATE (tables)" {
				created = false // nothing else can be tried on a table that is not there
			}
		}
	}
	if !needs.Process {
		return nil
	}
	return s.tryKill(ctx, db, refused)
}

// tryKill kills one connection of the account from another, as
// effectDbError and chaos do (KILL CONNECTION of the account's own
// connections needs no privilege, but a proxy in front of the server may
// refuse it).
func (s *Server) tryKill(ctx context.Context, db *sql.DB, refused func(privilege, why, stmt string, err error) (bool, error)) error {
	victim, err := db.Conn(ctx)
	if err != nil {
		return unavailablef("check the account's privileges: %v", redactErr(err, s.user))
	}
	defer victim.Close()
	var id int64
	if err := victim.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		return unavailablef("check the account's privileges: %v", redactErr(err, s.user))
	}
	stmt := fmt.Sprintf("KILL CONNECTION %d", id)
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		_, err = refused("KILL CONNECTION of the account's own connections", "effectDbError and chaos", stmt, err)
		return err
	}
	return nil
}

// accessDenied tells whether a server error number is a refusal for want
// of a privilege: database, table, column, global privilege, routine,
// binary-logged trigger, KILL of a thread one does not own.
func accessDenied(n uint16) bool {
	switch n {
	case 1044, 1045, 1142, 1143, 1227, 1370, 1419, 1095, 1211:
		return true
	}
	return false
}

// firstLine is the first line of a statement, for a message.
func firstLine(q string) string {
	q, _, _ = strings.Cut(strings.TrimSpace(q), "\n")
	return q
}

// marked wraps err and a sentinel without repeating the sentinel's text.
type marked struct{ err, mark error }

func (e *marked) Error() string   { return e.err.Error() }
func (e *marked) Unwrap() []error { return []error{e.err, e.mark} }
