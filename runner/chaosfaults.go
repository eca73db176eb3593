package runner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The nemesis: it applies the schedule, recording each fault as a fault
// event of the nemesis actor (point nemesis-<kind>, target, what was done
// and how it shows) and, for a fault that lasts, a heal event when it ends
// (with what it did meanwhile). At the end of the duration every fault
// still on is healed at once.

// heal ends a fault and says what it did meanwhile.
type heal func(ctx context.Context) (string, error)

// runNemesis applies the schedule from t0 and returns once the duration
// has passed and every fault is healed.
func (cr *chaosRun) runNemesis(ctx context.Context, t0 time.Time) error {
	healAll := make(chan struct{})
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	keep := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	for _, f := range cr.schedule {
		if !sleepUntil(ctx, t0.Add(f.At)) {
			break
		}
		h, err := cr.inject(ctx, f)
		if err != nil {
			keep(fmt.Errorf("nemesis fault %v: %w", f, err))
			continue
		}
		if h == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(time.Until(t0.Add(f.At + f.For))):
			case <-healAll:
			case <-ctx.Done():
			}
			// Healing must happen even after an interrupt: a paused
			// process, a cut link or a broker fault left on would outlive
			// the scenario.
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
			defer cancel()
			detail, err := h(hctx)
			if err != nil {
				keep(fmt.Errorf("heal %v: %w", f, err))
				detail = "healing failed: " + oneLine(err.Error())
			}
			cr.note(evidence.Event{Kind: evidence.KindHeal, Point: point(f.Kind), Target: f.Target, Detail: detail})
		}()
	}
	sleepUntil(ctx, t0.Add(cr.cfg.Duration))
	close(healAll)
	wg.Wait()
	return firstErr
}

func point(k nemesis.Kind) string { return spec.NemesisPrefix + string(k) }

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return true
	}
}

// inject applies f, records it, and returns how to heal it (nil for an
// instant fault). A fault that finds nothing to hit (no process running in
// the slot, no open transaction) is recorded as such and counted as not
// injected.
func (cr *chaosRun) inject(ctx context.Context, f nemesis.Fault) (heal, error) {
	ev := evidence.Event{Kind: evidence.KindFault, Point: point(f.Kind), Target: f.Target}
	var h heal
	var detail string
	var err error
	switch f.Kind {
	case nemesis.Kill:
		detail, err = cr.kill(f)
	case nemesis.Pause:
		detail, h, err = cr.pause(f)
	case nemesis.ProduceRefused, nemesis.ProduceTimeout, nemesis.AckLost, nemesis.FetchError, nemesis.Rebalance:
		detail, h, err = cr.brokerWindow(f)
	case nemesis.BrokerRestart:
		detail, err = cr.restartBroker(ctx)
	case nemesis.ConnKill:
		detail, err = cr.killConnection(ctx, f)
	case nemesis.DBCrash:
		detail, err = cr.crashDatabase(ctx)
	case nemesis.Latency, nemesis.NetCut:
		detail, h, err = cr.network(f)
	default:
		return nil, fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	if err != nil {
		return nil, err
	}
	if detail == "" {
		return nil, nil // nothing to hit: skip() recorded it
	}
	ev.Detail = fmt.Sprintf("fault #%d at %v: %s", f.N, f.At.Round(time.Millisecond), detail)
	cr.note(ev)
	cr.mu.Lock()
	cr.injected[string(f.Kind)]++
	cr.mu.Unlock()
	return h, nil
}

// kill sends SIGKILL to the slot's running process; the supervisor
// records its end and starts it again.
func (cr *chaosRun) kill(f nemesis.Fault) (string, error) {
	s := cr.slot(f.Target)
	p, name, err := s.signal(syscall.SIGKILL)
	if err != nil {
		return "", nil // between two incarnations: nothing to kill
	}
	return fmt.Sprintf("SIGKILL to %s (pid %d); the supervisor starts it again", name, p.Pid()), nil
}

// pause stops the relay's process with SIGSTOP past its lease; the heal
// sends SIGCONT to that same process.
func (cr *chaosRun) pause(f nemesis.Fault) (string, heal, error) {
	s := cr.slot(f.Target)
	p, name, err := s.signal(syscall.SIGSTOP)
	if err != nil {
		return "", nil, nil
	}
	time.Sleep(5 * time.Millisecond)
	state := processState(p.Pid())
	detail := fmt.Sprintf("SIGSTOP to %s (pid %d, state %q after it) for %v, longer than its lease %v",
		name, p.Pid(), state, f.For.Round(time.Millisecond), nemesis.PauseLease)
	return detail, func(context.Context) (string, error) {
		err := p.Signal(syscall.SIGCONT)
		if err != nil {
			return fmt.Sprintf("SIGCONT to %s (pid %d) not delivered: %v (the process ended meanwhile)", name, p.Pid(), err), nil
		}
		return fmt.Sprintf("SIGCONT to %s (pid %d) after %v stopped", name, p.Pid(), f.For.Round(time.Millisecond)), nil
	}, nil
}

// brokerFaults maps the broker's window kinds to infra's.
var brokerFaults = map[nemesis.Kind]struct {
	f    infra.BrokerFault
	what string
}{
	nemesis.ProduceRefused: {infra.FaultProduceRefused, "answers INVALID_RECORD to every produce request on the topic, appending nothing"},
	nemesis.ProduceTimeout: {infra.FaultProduceTimeout, "leaves every produce request unanswered, appending nothing"},
	nemesis.AckLost:        {infra.FaultAckLost, "appends every produce request on the topic and answers REQUEST_TIMED_OUT"},
	nemesis.FetchError:     {infra.FaultFetchError, "answers NOT_LEADER_OR_FOLLOWER to every fetch of the topic"},
	nemesis.Rebalance:      {infra.FaultRebalance, "answers REBALANCE_IN_PROGRESS to every heartbeat of the group"},
}

func (cr *chaosRun) brokerWindow(f nemesis.Fault) (string, heal, error) {
	bf := brokerFaults[f.Kind]
	w, err := cr.e.Kafka.Inject(bf.f, cr.topic, cr.group)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("the broker %s for %v (kfake, at the protocol)", bf.what, f.For.Round(time.Millisecond)),
		func(context.Context) (string, error) {
			return fmt.Sprintf("the broker answers normally again; it failed %d request(s) meanwhile (its own count)", w.Heal()), nil
		}, nil
}

// restartBroker closes the broker and starts it on its data directory and
// port, and checks that the topic's records survived.
func (cr *chaosRun) restartBroker(ctx context.Context) (string, error) {
	before, err := cr.e.Kafka.EndOffset(ctx, cr.topic)
	if err != nil {
		return "", err
	}
	t0 := time.Now()
	if err := cr.e.Kafka.Restart(ctx); err != nil {
		return "", err
	}
	took := time.Since(t0)
	after, err := cr.e.Kafka.EndOffset(ctx, cr.topic)
	if err != nil {
		return "", err
	}
	if after < before {
		cr.e.Result.Failf("the broker lost records in a restart: %d before, %d after", before, after)
	}
	return fmt.Sprintf("the broker was closed and started again on its data directory and port %s in %v; "+
		"the topic held %d record(s) before and %d after", cr.e.Kafka.Brokers[0], took.Round(time.Millisecond), before, after), nil
}

// killConnection kills a connection of the scenario's database that is
// inside a transaction, or else one running a statement (whoever holds
// it: the processlist does not say which process is behind a proxied
// connection), and says what it was doing.
func (cr *chaosRun) killConnection(ctx context.Context, f nemesis.Fault) (string, error) {
	var id int64
	var command, state, info sql.NullString
	var age sql.NullInt64
	// Transactions last milliseconds: look for one for a little while.
	deadline := time.Now().Add(connKillSearch)
	for {
		err := cr.e.DB.QueryRowContext(ctx, `SELECT p.ID, p.COMMAND, p.STATE, p.INFO,
    TIMESTAMPDIFF(MICROSECOND, t.trx_started, NOW(6))
  FROM information_schema.PROCESSLIST p LEFT JOIN information_schema.INNODB_TRX t ON p.ID = t.trx_mysql_thread_id
  WHERE p.DB = ? AND p.ID <> CONNECTION_ID() AND (t.trx_id IS NOT NULL OR p.COMMAND <> 'Sleep')
  ORDER BY t.trx_id IS NULL, p.ID LIMIT 1`, cr.e.Scratch.Name).Scan(&id, &command, &state, &info, &age)
		if err == nil {
			_, err = cr.e.DB.ExecContext(ctx, "KILL CONNECTION "+fmt.Sprint(id))
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

// errNoSuchThread is the server's answer to a KILL of a connection that
// is gone (ER_NO_SUCH_THREAD, "Unknown thread id").
const errNoSuchThread = 1094

// connKillSearch is how long conn-kill looks for an open transaction.
const connKillSearch = 500 * time.Millisecond

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// crashDatabase kills the private database server with SIGKILL and starts
// it again on its data directory.
func (cr *chaosRun) crashDatabase(ctx context.Context) (string, error) {
	if cr.e.crashDB == nil {
		return "", nil
	}
	return cr.e.crashDB(ctx)
}

// network delays or cuts the link named by f.Target.
func (cr *chaosRun) network(f nemesis.Fault) (string, heal, error) {
	l := cr.proxies.Link(f.Target)
	if l == nil {
		return "", nil, fmt.Errorf("no proxy for link %s", f.Target)
	}
	var detail string
	if f.Kind == nemesis.Latency {
		if err := l.Delay(f.Delay); err != nil {
			return "", nil, err
		}
		detail = fmt.Sprintf("the proxy %s -> %s delays every packet by %v (each way) for %v", l.Addr, l.Upstream, f.Delay,
			f.For.Round(time.Millisecond))
	} else {
		l.Cut()
		detail = fmt.Sprintf("the proxy %s -> %s dropped its connections and refuses new ones for %v", l.Addr, l.Upstream,
			f.For.Round(time.Millisecond))
	}
	return detail, func(ctx context.Context) (string, error) {
		if err := l.Heal(ctx); err != nil {
			return "", err
		}
		return "the link " + f.Target + " carries traffic normally again", nil
	}, nil
}

// slot returns the slot named name (the schedule only names existing
// ones).
func (cr *chaosRun) slot(name string) *slot {
	for _, s := range cr.slots {
		if s.name == name {
			return s
		}
	}
	panic("chaos: no slot " + name)
}
