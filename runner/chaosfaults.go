package runner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/actor"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The nemesis: it applies the schedule, recording each fault as a fault
// event of the nemesis actor (point nemesis-<kind>, target, what was done
// and how it shows) and, for a fault that lasts, a heal event when it ends
// (with what it did meanwhile). A fault injected within the duration lasts
// its drawn length, also past the end of the duration: a relay paused late
// still wakes up a zombie, past its lease.

// heal ends a fault and says what it did meanwhile.
type heal func(ctx context.Context) (string, error)

// runNemesis applies the schedule from t0 and returns once the duration
// has passed and every fault is healed.
func (cr *chaosRun) runNemesis(ctx context.Context, t0 time.Time) error {
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
		// A fault lasts For from when it took hold: an aimed one takes
		// hold when its target gets where it was aimed.
		until := time.Now().Add(f.For)
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(time.Until(until)):
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
	wg.Wait()
	cr.resumeStopped()
	return firstErr
}

// resumeStopped sends SIGCONT to every actor process still stopped once
// every fault is healed, and records it: none should be (an aim that
// missed disarms itself in the process), but a process left stopped would
// outlive the faults.
func (cr *chaosRun) resumeStopped() {
	for _, s := range cr.slots {
		p, name := s.running()
		if p == nil || processState(p.Pid()) != "T" {
			continue
		}
		detail := fmt.Sprintf("%s (pid %d) was found stopped after every fault was healed; SIGCONT", name, p.Pid())
		if err := p.Signal(syscall.SIGCONT); err != nil {
			detail = fmt.Sprintf("%s (pid %d) was found stopped after every fault was healed; SIGCONT failed: %v", name, p.Pid(), err)
		}
		cr.note(evidence.Event{Kind: evidence.KindHeal, Point: point(nemesis.Pause), Target: s.name, Detail: detail})
	}
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
		// Nothing to hit: recorded as skipped, so that the proof boundary
		// lists the kind as drawn and not injected rather than as run.
		cr.note(evidence.Event{Kind: evidence.KindFaultSkipped, Point: point(f.Kind), Target: f.Target,
			Detail: fmt.Sprintf("fault #%d at %v: %s", f.N, f.At.Round(time.Millisecond), skipReasons[f.Kind])})
		return nil, nil
	}
	ev.Detail = fmt.Sprintf("fault #%d at %v: %s", f.N, f.At.Round(time.Millisecond), detail)
	cr.note(ev)
	cr.mu.Lock()
	cr.injected[string(f.Kind)]++
	cr.mu.Unlock()
	return h, nil
}

// skipReasons say why a fault of each kind that can find nothing to hit
// was skipped.
var skipReasons = map[nemesis.Kind]string{
	nemesis.Kill:    "nothing to kill: the slot had no running process (between two incarnations)",
	nemesis.Pause:   "nothing to pause: the slot had no running process, or it was stopped or held by another fault",
	nemesis.DBCrash: "no server of the run's own to crash: the database is not a private mariadbd",
	nemesis.ConnKill: "nothing to kill: no connection of the scenario's database was in a transaction or running a " +
		"statement while the nemesis looked",
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

// pause stops the relay's process past its lease, where it holds
// published claims it has not marked: aimed at after-publish-before-mark,
// it wakes up a zombie whose marks carry stale tokens. When the relay
// does not pass there within the aim's window, it is stopped with SIGSTOP
// wherever it is. The heal sends SIGCONT to that same process.
//
// An aimed pause also arms every other relay at takeover-published: the
// one that takes the paused relay's rows over stops holding its takeover,
// published and not marked. The heal then wakes the zombie first and the
// taker takeoverHold later, so that the zombie's mark meets a row CLAIMED
// under a newer token (with the relays' shared claim id: the same
// claim_id, another claim_version), the case a compare-and-set that checks
// less than the whole token gets wrong.
func (cr *chaosRun) pause(f nemesis.Fault) (string, heal, error) {
	s := cr.slot(f.Target)
	if p, _ := s.running(); p == nil || processState(p.Pid()) == "T" || cr.holding(p) {
		return "", nil, nil // none runs, or another fault holds it
	}
	p, name, aimed, miss := cr.aim(s, fault.AfterPublishBeforeMark)
	if p == nil {
		return "", nil, nil
	}
	var detail string
	var takers []taker
	if aimed != "" {
		detail = fmt.Sprintf("%s for %v, longer than its lease %v", aimed, f.For.Round(time.Millisecond), nemesis.PauseLease)
		armed := time.Now()
		for _, o := range cr.slots {
			if o == s || !slices.Contains(o.stopAt, fault.TakeoverPublished) {
				continue
			}
			if tp, tname, _, miss := cr.arm(o, fault.TakeoverPublished); tp != nil && miss == "" {
				// Armed, it is this fault's: no other fault stops or
				// wakes it until the heal lets it go.
				cr.hold(tp, true)
				takers = append(takers, taker{tp, tname, armedUntil(armed, fault.TakeoverPublished)})
			}
		}
	} else {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			return "", nil, nil // it ended meanwhile
		}
		time.Sleep(5 * time.Millisecond)
		detail = fmt.Sprintf("SIGSTOP to %s (pid %d, state %q after it) for %v, longer than its lease %v%s",
			name, p.Pid(), processState(p.Pid()), f.For.Round(time.Millisecond), nemesis.PauseLease, miss)
	}
	cr.hold(p, true)
	return detail, func(context.Context) (string, error) {
		var held []taker
		for _, t := range takers {
			if processState(t.p.Pid()) == "T" {
				held = append(held, t)
			}
		}
		defer func() {
			cr.hold(p, false)
			for _, t := range takers {
				cr.hold(t.p, false)
			}
		}()
		out := fmt.Sprintf("SIGCONT to %s (pid %d) after %v stopped", name, p.Pid(), f.For.Round(time.Millisecond))
		if err := p.Signal(syscall.SIGCONT); err != nil {
			out = fmt.Sprintf("SIGCONT to %s (pid %d) not delivered: %v (the process ended meanwhile)", name, p.Pid(), err)
		}
		if len(held) > 0 {
			time.Sleep(takeoverHold)
		}
		for _, t := range held {
			out += fmt.Sprintf("; %s (pid %d) had stopped itself at %s, holding its takeover unmarked, and got SIGCONT %v later",
				t.name, t.p.Pid(), fault.TakeoverPublished, takeoverHold)
			_ = t.p.Signal(syscall.SIGCONT)
		}
		// A taker whose arm is still on may stop after this heal: wait
		// for its window to end, and wake it if it stopped.
		for _, t := range takers {
			if slices.Contains(held, t) {
				continue
			}
			if _, ok := waitStopped(t.p, t.until); ok {
				out += fmt.Sprintf("; %s (pid %d) stopped itself at %s after the zombie woke, and got SIGCONT", t.name, t.p.Pid(),
					fault.TakeoverPublished)
				_ = t.p.Signal(syscall.SIGCONT)
			}
		}
		return out, nil
	}, nil
}

// hold records that a lasting fault keeps p stopped (on) or no longer
// (off).
func (cr *chaosRun) hold(p *actor.Process, on bool) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if on {
		cr.held[p.Pid()] = true
	} else {
		delete(cr.held, p.Pid())
	}
}

// holding tells whether a lasting fault keeps p stopped.
func (cr *chaosRun) holding(p *actor.Process) bool {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.held[p.Pid()]
}

// taker is a relay armed at takeover-published while another relay is
// paused, until its arm has surely ended.
type taker struct {
	p     *actor.Process
	name  string
	until time.Time
}

// takeoverHold is how long a taker held at takeover-published stays
// stopped after the zombie woke: time for the zombie's mark to arrive
// first.
const takeoverHold = 250 * time.Millisecond

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

// aimsOf is where conn-kill aims at each role: inside the relay's claim
// transaction, inside the consumer's effect transaction before its
// COMMIT, inside the order transaction before its last write (the
// intent).
var aimsOf = map[string]fault.Point{
	"relay":    fault.ClaimLocked,
	"consumer": fault.EffectCommitKilled,
	"orders":   fault.IntentInsert,
}

// killConnection kills the database connections of the target actor while
// it is stopped inside a transaction (aimed: see aimsOf), by dropping them
// at its proxy: the server ends their sessions and rolls their
// transactions back, and the actor, resumed, finds its connection dead in
// the middle of its transaction. When the actor does not get there within
// the aim's window, it kills instead (KILL CONNECTION) a connection of the
// scenario's database that is inside a transaction, or else one running a
// statement (whoever holds it: the processlist does not say which process
// is behind a proxied connection). It says what it did.
func (cr *chaosRun) killConnection(ctx context.Context, f nemesis.Fault) (string, error) {
	s := cr.slot(f.Target)
	role, _, _ := strings.Cut(s.name, "-")
	p, _, aimed, miss := cr.aim(s, aimsOf[role])
	if aimed == "" {
		if p == nil {
			miss = " (" + f.Target + " had no running process)"
		}
		detail, err := cr.killAnyConnection(ctx)
		if detail != "" {
			detail += miss
		}
		return detail, err
	}
	l := cr.proxies.Link(f.Target + ">" + nemesis.TargetDatabase)
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

// aim sends the slot's running process the signal that arms its stop at
// point (actor --stop-at) and waits until it stopped itself there. It
// returns the process (nil: none runs) and, when it stopped, what
// happened; otherwise miss says why the aim missed.
func (cr *chaosRun) aim(s *slot, point fault.Point) (p *actor.Process, name, aimed, miss string) {
	p, name, sig, miss := cr.arm(s, point)
	if p == nil || miss != "" {
		return p, name, "", miss
	}
	if took, ok := waitStopped(p, armedUntil(time.Now(), point)); ok {
		return p, name, fmt.Sprintf("%s (pid %d) stopped itself at %s, %v after %v armed it (state \"T\")",
			name, p.Pid(), point, took.Round(time.Millisecond), sig), ""
	}
	return p, name, "", fmt.Sprintf(" (%s did not pass %s within %v of %v)", name, point, actor.StopWindow(point), sig)
}

// arm sends the slot's running process the signal that arms its stop at
// point; miss says why it was not sent (p nil: no process runs).
func (cr *chaosRun) arm(s *slot, point fault.Point) (p *actor.Process, name string, sig syscall.Signal, miss string) {
	p, name = s.running()
	if p == nil {
		return nil, "", 0, ""
	}
	if processState(p.Pid()) == "T" || cr.holding(p) {
		return p, name, 0, fmt.Sprintf(" (%s is held by another fault)", name)
	}
	i := slices.Index(s.stopAt, point)
	if i < 0 {
		return p, name, 0, fmt.Sprintf(" (%s does not stop at %s)", name, point)
	}
	sig = actor.StopSignals[i]
	if !catches(p.Pid(), sig) {
		return p, name, sig, fmt.Sprintf(" (%s was still starting: it did not catch %v yet)", name, sig)
	}
	if err := p.Signal(sig); err != nil {
		return p, name, sig, fmt.Sprintf(" (%v to %s not delivered: %v)", sig, name, err)
	}
	return p, name, sig, ""
}

// armedUntil is when an arm of point sent at t has surely ended: the
// process's own window starts when it receives the signal, a little
// later.
func armedUntil(t time.Time, point fault.Point) time.Time {
	return t.Add(actor.StopWindow(point) + 100*time.Millisecond)
}

// waitStopped waits until p is stopped (state T), or until; it returns
// how long it waited.
func waitStopped(p *actor.Process, until time.Time) (time.Duration, bool) {
	t0 := time.Now()
	for {
		if processState(p.Pid()) == "T" {
			return time.Since(t0), true
		}
		if time.Now().After(until) {
			return time.Since(t0), false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// catches reports whether pid has a handler for sig (SigCgt in its
// /proc status): before its handler is installed, the signal would end it.
func catches(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}

// killAnyConnection is conn-kill unaimed: KILL CONNECTION of a connection
// of the scenario's database inside a transaction, or else of one
// running a statement.
func (cr *chaosRun) killAnyConnection(ctx context.Context) (string, error) {
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
