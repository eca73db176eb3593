package runner

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/actor"
	chaoseng "github.com/orderflow-audit/orderflow-audit/runner/chaos"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The reference actors as the chaos engine's targets: each slot runs
// `orderflow-audit actor` processes with their own event logs, each link
// is a proxy, the broker is the embedded one, the database the scenario's,
// and the actors stop themselves where a signal aims them (actor
// --stop-at).

// targets puts a proxy on every link of an actor (to the database;
// relays and consumers also to the broker) and returns the slots of the
// order service, the relays and the consumers, with the broker, the
// database and the aimer.
func (cr *chaosRun) targets() (chaoseng.Targets, error) {
	e := cr.e
	if len(e.Kafka.Brokers) != 1 {
		return chaoseng.Targets{}, fmt.Errorf("the chaos scenario proxies one broker; this one has %d addresses", len(e.Kafka.Brokers))
	}
	dbAddr := e.Server.ConfigFor(e.Scratch.Name).Addr
	link := func(actorSlot, component, upstream string) (*chaoseng.Link, error) {
		return cr.proxies.Add(actorSlot+">"+component, upstream)
	}
	dsnVia := func(l *chaoseng.Link) string {
		c := e.Server.ConfigFor(e.Scratch.Name)
		c.Addr = l.Addr
		return c.FormatDSN()
	}
	plantName := string(e.Plant)

	ordersDB, err := link(nemesis.OrdersName, nemesis.TargetDatabase, dbAddr)
	if err != nil {
		return chaoseng.Targets{}, err
	}
	cr.addSlot(nemesis.OrdersName, chaoseng.Aims(nemesis.OrdersName), func(string) (actor.Spec, []string) {
		return actor.Spec{Role: actor.Orders, DB: e.Scratch.Name, Plant: plantName}, actor.Env(dsnVia(ordersDB), e.Secret)
	})
	for i := 1; i <= cr.cfg.Relays; i++ {
		name := nemesis.RelayName(i)
		db, err := link(name, nemesis.TargetDatabase, dbAddr)
		if err != nil {
			return chaoseng.Targets{}, err
		}
		br, err := link(name, nemesis.TargetBroker, e.Kafka.Brokers[0])
		if err != nil {
			return chaoseng.Targets{}, err
		}
		cr.addSlot(name, chaoseng.Aims(name), func(actorName string) (actor.Spec, []string) {
			return actor.Spec{
				Role: actor.Relay, DB: e.Scratch.Name, Plant: plantName, Brokers: []string{br.Addr}, Via: br.Addr,
				Topic: cr.topic, ClaimID: chaosClaimID(e.RunID), Lease: nemesis.PauseLease,
				PublishTimeout: chaosPublishTimeout, Batch: chaosBatch, Poll: 50 * 1e6,
			}, actor.Env(dsnVia(db), nil)
		})
	}
	for i := 1; i <= cr.cfg.Consumers*len(cr.inboxes); i++ {
		// consumer-1..C are the first group's, C+1..2C the second's, ...
		name, g := nemesis.ConsumerName(i), (i-1)/cr.cfg.Consumers
		group, inbox := cr.groups[g], cr.inboxes[g]
		db, err := link(name, nemesis.TargetDatabase, dbAddr)
		if err != nil {
			return chaoseng.Targets{}, err
		}
		br, err := link(name, nemesis.TargetBroker, e.Kafka.Brokers[0])
		if err != nil {
			return chaoseng.Targets{}, err
		}
		cr.addSlot(name, chaoseng.Aims(name), func(actorName string) (actor.Spec, []string) {
			return actor.Spec{
				Role: actor.Consumer, DB: e.Scratch.Name, Plant: plantName, Brokers: []string{br.Addr}, Via: br.Addr,
				Topic: cr.topic, Group: group, Name: inbox, Member: actorName, InstanceID: name,
				BatchEffects: e.Scenario.Mode() == spec.ModeBatch,
			}, actor.Env(dsnVia(db), nil)
		})
	}
	return chaoseng.Targets{
		Slots:    cr.slots,
		Links:    cr.proxies,
		Broker:   chaoseng.EmbeddedBroker{Kafka: e.Kafka, Topic: cr.topic, Group: cr.groups[0]},
		Database: chaoseng.Server{DB: e.DB, Schema: e.Scratch.Name, CrashFunc: e.crashDB},
		Aimer:    cr,
	}, nil
}

// chaosClaimID is the claim id of every relay of the chaos scenario: they
// run as replicas of one deployment configured with one instance id, and
// keep it when restarted. Only claim_version then tells their claims
// apart, as it tells one relay's own claims apart after it took its own
// row over; a compare-and-set that checks less than the whole token
// (claim_version and claim_id) lets a zombie's stale mark through. The
// actor names still tell the processes apart in the evidence.
func chaosClaimID(runID string) string { return "relays-" + runID }

// addSlot adds the slot name, whose processes stop at stopAt when aimed
// and run the Spec that spec makes for each incarnation (its actor name),
// with the environment it needs.
func (cr *chaosRun) addSlot(name string, stopAt []fault.Point, spec func(actorName string) (actor.Spec, []string)) {
	cr.stopAt[name] = stopAt
	cr.slots = append(cr.slots, chaoseng.Slot{Name: name, Launch: func(ctx context.Context, actorName string) (chaoseng.Launched, error) {
		return cr.launch(ctx, name, actorName, spec)
	}})
}

// launch starts incarnation actorName of slot as an actor process. Its
// log is created empty first, so that a process killed before it opens
// its log still leaves one. The order service keeps its address across
// restarts.
func (cr *chaosRun) launch(ctx context.Context, slot, actorName string, spec func(string) (actor.Spec, []string)) (chaoseng.Launched, error) {
	e := cr.e
	logPath, err := e.logPath(actorName)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		return nil, fmt.Errorf("create the log of %s: %w", actorName, err)
	}
	sp, env := spec(actorName)
	for _, p := range cr.stopAt[slot] {
		sp.StopAt = append(sp.StopAt, string(p))
	}
	sp.LogPath, sp.RunID, sp.Scenario, sp.Actor = logPath, e.RunID, e.Scenario.ID, actorName
	if slot == nemesis.OrdersName {
		cr.mu.Lock()
		sp.Listen = cr.listen
		cr.mu.Unlock()
	}
	p, err := actor.Start(ctx, e.exe, sp, env)
	if err != nil {
		// Its log stays (empty, or with what it wrote); the next start
		// says why this one failed.
		return nil, err
	}
	if slot == nemesis.OrdersName {
		cr.mu.Lock()
		if cr.url == "" && p.URL != "" {
			cr.url = p.URL
			cr.listen = strings.TrimPrefix(p.URL, "http://")
		}
		cr.mu.Unlock()
	}
	return actorProcess{p}, nil
}

// actorProcess is an actor process as the engine sees it.
type actorProcess struct{ *actor.Process }

func (p actorProcess) Wait() (chaoseng.Exit, error) {
	x, err := p.Process.Wait()
	return chaoseng.Exit{Code: x.Code, Signal: x.Signal, Stderr: x.Stderr}, err
}

// StopsAt tells whether the slot's actors stop at point when aimed.
func (cr *chaosRun) StopsAt(slot string, point fault.Point) bool {
	return slices.Contains(cr.stopAt[slot], point)
}

// Arm sends p the signal that arms its stop at point (actor --stop-at);
// miss says why it was not sent.
func (cr *chaosRun) Arm(p chaoseng.Process, name, slot string, point fault.Point) (by, miss string) {
	sig := actor.StopSignals[slices.Index(cr.stopAt[slot], point)]
	if !catches(p.Pid(), sig) {
		return sig.String(), fmt.Sprintf(" (%s was still starting: it did not catch %v yet)", name, sig)
	}
	if err := p.Signal(sig); err != nil {
		return sig.String(), fmt.Sprintf(" (%v to %s not delivered: %v)", sig, name, err)
	}
	return sig.String(), ""
}

// Window is how long an actor's stop at point stays armed.
func (cr *chaosRun) Window(point fault.Point) time.Duration { return actor.StopWindow(point) }

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
