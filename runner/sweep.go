package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// sweepRuns are the scenarios this file runs, by id (runs). The call
// sweep (spec/sweep.go).
var sweepRuns = map[string]runFunc{"callSweep": callSweep}

// The sweep's sizes and times.
const (
	sweepOrders = 2                      // orders placed per run
	sweepLease  = 200 * time.Millisecond // the relay's lease: a claim left behind is taken over when it ran out
	sweepSettle = 4 * time.Second        // how long a run is given to settle
	sweepPoll   = 150 * time.Millisecond // the longest one consumer step waits for records
)

// sweepBrokerKeys are the requests the broker is told to drop for a kill
// run of a broker site; a broker site not listed gets no kill run.
var sweepBrokerKeys = map[string]kmsg.Key{
	"relay.publish":          kmsg.Produce,
	"relay.publish-one":      kmsg.Produce,
	"consumer.fetch":         kmsg.Fetch,
	"consumer.offset.commit": kmsg.OffsetCommit,
}

// sweep is the state of one call sweep.
type sweep struct {
	e            *Env
	ctx          context.Context
	topic, group string
	faults       *fault.Injector
	orders       *orders.Client
	relay, thief sut.Relay // relay-a runs the rounds; relay-b takes a row over from each
	cons         sut.Consumer
	members      int      // consumers started
	events       []string // every intent placed
	sites        map[string]bool
	modes        map[fault.CallMode]int
	runs         int
	late         int      // intents not SENT when their run ended
	skipped      []string // site/mode pairs without a run, and why (for the tests)
}

// callSweep runs the scenario callSweep of spec/sweep.go, which says what
// it does and what its metrics mean.
func callSweep(ctx context.Context, e *Env) error {
	topic, err := e.Topic(ctx, "")
	if err != nil {
		return err
	}
	if err := e.SeedStock(ctx, defaultSKU, 100000); err != nil {
		return err
	}
	s := &sweep{e: e, ctx: ctx, topic: topic, group: "notify-" + e.RunID, faults: &fault.Injector{},
		sites: map[string]bool{}, modes: map[fault.CallMode]int{}}
	if s.orders, err = e.Orders(); err != nil {
		return err
	}
	lease := func(c *sut.RelayConfig) { c.Lease, c.PublishTimeout = sweepLease, time.Second }
	if s.relay, err = e.RelayWith("relay-a", topic, s.faults, lease); err != nil {
		return err
	}
	if s.thief, err = e.RelayWith("relay-b", topic, s.faults, lease); err != nil {
		return err
	}
	if err := s.startConsumer(ctx); err != nil {
		return err
	}
	if err := s.run(ctx); err != nil { // the discovery: a clean run names the sites
		return err
	}
	for _, site := range s.faults.CallSites() {
		for _, mode := range fault.CallModes {
			if why := s.cannot(site, mode); why != "" {
				s.skipped = append(s.skipped, fmt.Sprintf("%s/%s (%s)", site.Name, mode, why))
				continue
			}
			s.faults.ArmCall(site.Name, mode, s.fail)
			err := s.run(ctx)
			if s.faults.DisarmCall() {
				s.runs++
				s.modes[mode]++
				s.sites[site.Name] = true
			} else {
				s.skipped = append(s.skipped, fmt.Sprintf("%s/%s (not reached)", site.Name, mode))
			}
			if err != nil {
				return err
			}
		}
	}
	if _, err := s.settle(ctx, s.events); err != nil { // what a run left behind
		return err
	}
	return s.measure(ctx)
}

// cannot says why site cannot fail in mode here ("" when it can).
func (s *sweep) cannot(site fault.CallSite, mode fault.CallMode) string {
	if mode != fault.CallKill || site.Kind != fault.Broker {
		return ""
	}
	if _, ok := sweepBrokerKeys[site.Name]; !ok {
		return "no broker request known to drop"
	}
	if !s.e.Kafka.Embedded() {
		return "an external broker cannot be told to drop a connection"
	}
	return ""
}

// startConsumer starts the next member of the group.
func (s *sweep) startConsumer(ctx context.Context) error {
	s.members++
	c, err := s.e.Consumer(ctx, fmt.Sprintf("consumer-%d", s.members), s.topic, s.group, s.faults)
	if err != nil {
		return err
	}
	s.cons = c
	return nil
}

// run places sweepOrders orders and drives the relay and the consumer
// until they are settled or sweepSettle passed (what is left is measured
// at the end).
func (s *sweep) run(ctx context.Context) error {
	ids := make([]string, sweepOrders)
	for i := range ids {
		o, err := s.e.placeCommitted(ctx, s.orders, fmt.Sprintf("sweep-%d", len(s.events)+1))
		if err != nil {
			return err
		}
		ids[i] = o.EventID
		s.events = append(s.events, o.EventID)
	}
	var serr error
	s.faults.ArmFunc(spec.AfterPublishBeforeMark, 1, func() error { serr = s.steal(ctx); return nil })
	_, err := s.settle(ctx, ids)
	s.faults.Disarm(spec.AfterPublishBeforeMark)
	if err = errors.Join(err, serr); err != nil {
		return err
	}
	for _, id := range ids { // the run's end, on record: a row a run left behind shows here
		st, err := s.e.Observe(ctx, id)
		if err != nil {
			return err
		}
		if st != evidence.StateSent {
			s.late++
		}
	}
	return nil
}

// steal runs once per run between relay-a's publish and its batch mark,
// when relay-a holds two rows or more: the lease of its last is aged by
// SQL and relay-b takes the row over, publishes and marks it (one row:
// Publish and Mark). relay-a's batch mark then finds one token lost: it
// rolls its first attempt back and marks the rows it still holds under
// lock (markLocked), so that those calls are swept too. A call of
// relay-b's that fails leaves its row to a takeover after its lease;
// only an error of the scenario's own is returned.
func (s *sweep) steal(ctx context.Context) error {
	var held []sut.Claimed
	rows, err := s.e.DB.QueryContext(ctx, `SELECT event_id, claim_version, claim_id FROM outbox
 WHERE state = 'CLAIMED' AND claim_id = ? ORDER BY id`, s.relay.ClaimID())
	if err != nil {
		return fmt.Errorf("rows relay-a holds: %w", err)
	}
	for rows.Next() {
		var c sut.Claimed
		if err := rows.Scan(&c.EventID, &c.ClaimVersion, &c.ClaimID); err != nil {
			rows.Close()
			return err
		}
		held = append(held, c)
	}
	rows.Close()
	if len(held) < 2 {
		return nil
	}
	if _, err := s.e.ExpireLease(ctx, held[len(held)-1]); err != nil {
		return err
	}
	cs, err := s.thief.Claim(ctx, 1)
	if err != nil || len(cs) == 0 {
		return nil // relay-b's claim failed (a swept call): the row waits for a takeover
	}
	if _, _, err := s.thief.Publish(ctx, cs[0]); err != nil {
		return nil
	}
	_, _ = s.thief.Mark(ctx, cs[0])
	return nil
}

// settle runs relay rounds and consumer steps until the intents ids are
// SENT with one effect each and the group committed the topic's end, or
// sweepSettle passed. A relay round that fails is run again (a relay
// loops); a consumer that stops on an error is closed and the group's
// next member started (a supervisor restarts it), which replays from
// the group's committed offset.
func (s *sweep) settle(ctx context.Context, ids []string) (bool, error) {
	deadline := time.Now().Add(sweepSettle)
	for {
		res, _ := s.relay.RunOnce(ctx) // a failed round is run again: its error is the actor's, on record
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if err := s.consume(ctx); err != nil {
			return false, err
		}
		done, err := s.settled(ctx, ids)
		if err != nil || done {
			return done, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		if len(res.Claimed) == 0 {
			time.Sleep(20 * time.Millisecond) // a claim left behind: its lease runs out
		}
	}
}

// consume polls until the consumer settled something (an offset
// committed, an effect transaction failed) or sweepPoll passed. A
// consumer that stops on an error is replaced.
func (s *sweep) consume(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, sweepPoll)
	defer cancel()
	base := -1
	_, err := s.cons.PollUntil(pctx, func(st sut.ConsumerStats) bool {
		n := st.OffsetsCommitted + st.EffectsRolledBack + st.CommitsUnknown
		if base < 0 {
			base = n
		}
		return n > base
	})
	switch {
	case err == nil || ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return nil
	}
	s.cons.Close()
	return s.startConsumer(ctx)
}

// settled tells whether the intents ids are SENT, each has one effect,
// and the group has committed the topic's end.
func (s *sweep) settled(ctx context.Context, ids []string) (bool, error) {
	in := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	sent, err := s.e.QueryInt(ctx, "SELECT COUNT(*) FROM outbox WHERE state = 'SENT' AND event_id IN ("+in+")", args...)
	if err != nil {
		return false, err
	}
	effects, err := s.e.QueryInt(ctx, "SELECT COUNT(*) FROM notification WHERE event_id IN ("+in+")", args...)
	if err != nil || sent != int64(len(ids)) || effects != int64(len(ids)) {
		return false, err
	}
	lag, err := s.lag(ctx)
	return lag == 0, err
}

// lag is the group's committed offset short of the topic's end.
func (s *sweep) lag(ctx context.Context) (int64, error) {
	end, err := s.e.Kafka.EndOffset(ctx, s.topic)
	if err != nil {
		return 0, err
	}
	committed, err := s.e.Kafka.Committed(ctx, s.group, s.topic)
	return end - committed, err
}

// fail is the sweep's CallFailer: it makes the armed call fail in mode
// and records the injection (a fault event at call-failed naming the site
// and the mode) before the actor sees the failure.
func (s *sweep) fail(site fault.CallSite, mode fault.CallMode) error {
	var err error
	how := ""
	switch {
	case mode == fault.CallBefore && site.Kind == fault.DB:
		err = &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction (the call sweep)"}
		how = "answered with MariaDB error 1213 (deadlock) before the statement ran"
	case mode == fault.CallBefore:
		err = fmt.Errorf("the call sweep: %w", kerr.UnknownServerError)
		how = "answered with Kafka UNKNOWN_SERVER_ERROR before the request was sent"
	case mode == fault.CallAfter && site.Kind == fault.DB:
		err = fmt.Errorf("the call sweep: the connection was lost after the statement took effect: %w", mysql.ErrInvalidConn)
		how = "the statement ran and took effect, then the caller got a lost connection"
	case mode == fault.CallAfter:
		err = fmt.Errorf("the call sweep: the connection was lost after the request took effect: %w", io.ErrUnexpectedEOF)
		how = "the request was sent and took effect, then the caller got a lost connection"
	case site.Kind == fault.DB:
		// The connections die for real; the caller gets the server's
		// answer to a statement its connection was killed under (a
		// statement sent on the dead connection would get the driver's
		// invalid connection instead: the after mode's error).
		n, kerr := s.killConnections(s.ctx)
		if kerr != nil {
			return kerr
		}
		err = &mysql.MySQLError{Number: 1927, SQLState: [5]byte{'7', '0', '1', '0', '0'}, Message: "Connection was killed"}
		how = fmt.Sprintf("%d connection(s) of the scenario's database killed with KILL CONNECTION from another connection; "+
			"the statement got the server's ER_CONNECTION_KILLED (1927)", n)
	default:
		if derr := s.e.Kafka.DropNext(sweepBrokerKeys[site.Name]); derr != nil {
			return derr
		}
		how = "the broker closes the connection of the next " + sweepBrokerKeys[site.Name].Name() + " request, then the request was sent"
	}
	if lerr := s.e.Emit(evidence.Event{Kind: evidence.KindFault, Point: string(spec.CallFailed), Target: site.Name,
		Reason: string(mode), Detail: fmt.Sprintf("%s %s fails %s: %s", site.Kind, site.Name, mode, how)}); lerr != nil {
		return lerr
	}
	return err
}

// killConnections kills every connection of the scenario's database but
// the asking one, and waits until the server has ended them.
func (s *sweep) killConnections(ctx context.Context) (int, error) {
	rows, err := s.e.DB.QueryContext(ctx, `SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()`, s.e.Scratch.Name)
	if err != nil {
		return 0, fmt.Errorf("find the connections to kill: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		// One that ended meanwhile answers "unknown thread id": it is gone either way.
		_, _ = s.e.DB.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, id := range ids {
		for {
			n, err := s.e.QueryInt(ctx, qConnectionAlive, id)
			if err != nil {
				return 0, err
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("connection %d still there 2 s after KILL CONNECTION", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return len(ids), nil
}

// measure records the metrics: the sites and runs swept, and what is
// left unsettled at the end (from the database and the broker).
func (s *sweep) measure(ctx context.Context) error {
	unsettled, err := s.e.QueryInt(ctx, `SELECT COUNT(*) FROM outbox o WHERE o.state <> 'SENT'
  OR (SELECT COUNT(*) FROM notification n WHERE n.event_id = o.event_id) <> 1`)
	if err != nil {
		return err
	}
	lag, err := s.lag(ctx)
	if err != nil {
		return err
	}
	s.e.Result.Metric("sites", len(s.sites))
	s.e.Result.Metric("runs", s.runs)
	s.e.Result.Metric("modes", FormatCallModes(s.modes))
	s.e.Result.Metric("late", s.late)
	s.e.Result.Metric("unsettled", unsettled)
	s.e.Result.Metric("lag", lag)
	return nil
}

// FormatCallModes is the modes metric: the runs per mode, in sweep order.
func FormatCallModes(n map[fault.CallMode]int) string {
	parts := make([]string, len(fault.CallModes))
	for i, m := range fault.CallModes {
		parts[i] = fmt.Sprintf("%s:%d", m, n[m])
	}
	return strings.Join(parts, "/")
}
