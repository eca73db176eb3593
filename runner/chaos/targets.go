package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// Targets are what the nemesis acts on, whoever wrote the processes. The
// schedule names them: a slot (nemesis.OrdersName, nemesis.RelayName(i),
// nemesis.ConsumerName(i)), a link "<slot>><component>" (component
// nemesis.TargetDatabase or nemesis.TargetBroker), the broker or the
// database.
type Targets struct {
	// Slots are the roles' processes, one slot per replica, in the order
	// they start. The engine's supervisor runs one process per slot at a
	// time and starts it again whenever it ends.
	Slots []Slot
	// Links are the proxies between the slots and the database or the
	// broker, named "<slot>><component>".
	Links *Proxies
	// Broker is the broker the slots use.
	Broker Broker
	// Database is the database the slots use.
	Database Database
	// Aimer stops a process at a place of its code path; nil: every
	// fault is unaimed (a pause is a SIGSTOP wherever the process is, a
	// connection kill hits whatever connection is in a transaction).
	Aimer Aimer
}

// Slot is one supervised process of a role: Launch starts each of its
// incarnations. The first incarnation is named as the slot ("relay-1"),
// the next ones add ".<n>" ("relay-1.2"); the name is the process's actor
// name in the evidence.
type Slot struct {
	Name   string
	Launch Launch
}

// Launch starts one incarnation of a slot, named name, as its own
// process. It returns once the process runs (and, for a service, answers).
type Launch func(ctx context.Context, name string) (Launched, error)

// Process is a running process of a role: the nemesis signals it
// (SIGKILL, SIGSTOP, SIGCONT, an Aimer's arming signal) and reads its
// state from /proc.
type Process interface {
	Pid() int
	Signal(sig os.Signal) error
}

// Launched is a process the supervisor started: it also kills it and
// waits for it.
type Launched interface {
	Process
	Kill() error
	// Wait waits for the process to end and says how it ended; err only
	// when it could not be waited for.
	Wait() (Exit, error)
}

// Exit is how a process ended. Its String is what the process-exit event
// says, the words the verifier reads ("killed by signal 9 (killed)",
// "exit 0"), whoever wrote the process.
type Exit struct {
	Code   int            // exit code; -1 when a signal ended it
	Signal syscall.Signal // the signal that ended it, or 0
	Stderr string         // what it wrote on stderr
}

func (e Exit) String() string {
	if e.Signal != 0 {
		return "killed by signal " + strconv.Itoa(int(e.Signal)) + " (" + e.Signal.String() + ")"
	}
	return fmt.Sprintf("exit %d", e.Code)
}

// Broker is the broker the slots use, as the nemesis sees it.
type Broker interface {
	// Addr is where it listens.
	Addr() string
	// Inject makes the broker fail requests as a window fault of kind k
	// says (nemesis.ProduceRefused, ProduceTimeout, AckLost, FetchError,
	// Rebalance), on the run's topic or group, until heal is called; heal
	// returns how many requests the broker failed meanwhile.
	Inject(k nemesis.Kind) (heal func() int64, err error)
	// Restart closes the broker and starts it again on its data directory
	// and address.
	Restart(ctx context.Context) error
	// Records is how many records the run's topic holds (its end offsets).
	Records(ctx context.Context) (int64, error)
}

// Database is the database the slots use, as the nemesis sees it.
type Database interface {
	// KillConnection kills a connection of the pipeline's database that
	// is inside a transaction, or else one running a statement, and says
	// which; "" when it found none to kill.
	KillConnection(ctx context.Context) (string, error)
	// Crash kills the database server with SIGKILL and starts it again on
	// its data directory, and says so; "" when the server is not the
	// run's to kill.
	Crash(ctx context.Context) (string, error)
}

// Aimer stops a process at a place of its code path, named by a fault
// point, rather than at a random instant: there the fault provokes the
// bug it is meant to. The reference actors stop themselves there when a
// signal arms them (actor --stop-at); a process the tool did not write
// could be stopped when the database shows it passed there.
type Aimer interface {
	// StopsAt tells whether the processes of slot can be aimed at point.
	StopsAt(slot string, point fault.Point) bool
	// Arm arms p, the running process of slot named name, to stop itself
	// at its next pass of point within Window(point). It returns what
	// armed it, and, when it could not be armed, why (" (...)").
	Arm(p Process, name, slot string, point fault.Point) (by, miss string)
	// Window is how long an arm at point lasts.
	Window(point fault.Point) time.Duration
}

// Workload is the load the pipeline runs under and how to tell it has
// settled.
type Workload interface {
	// Send sends r, again while its answer is not final, until it has a
	// final answer or until passes. It returns the answer and how many
	// times it was sent.
	Send(ctx context.Context, r nemesis.Request, until time.Time) (Answer, int)
	// Quiescent says what is still in flight ("" when nothing is): once
	// every fault is healed, the pipeline settles when nothing is.
	Quiescent(ctx context.Context) (string, error)
}

// Answer is the final answer to one request of the load.
type Answer int

// The answers.
const (
	// Unanswered: no final answer before the load's end.
	Unanswered Answer = iota
	// Accepted: the request was carried out (201 Created).
	Accepted
	// Rejected: the request was refused for good.
	Rejected
)
