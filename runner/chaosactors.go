package runner

import (
	"context"
	"fmt"
	"sync"

	"github.com/orderflow-audit/orderflow-audit/runner/actor"
	chaoseng "github.com/orderflow-audit/orderflow-audit/runner/chaos"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// startActors puts a proxy on every link of an actor (to the database;
// relays and consumers also to the broker), then starts the order service,
// the relays and the consumers under supervision, and waits until each
// has started once.
func (cr *chaosRun) startActors(ctx context.Context) error {
	e := cr.e
	if len(e.Kafka.Brokers) != 1 {
		return fmt.Errorf("the chaos scenario proxies one broker; this one has %d addresses", len(e.Kafka.Brokers))
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
		return err
	}
	cr.orders = cr.newSlot(nemesis.OrdersName, func(string) (actor.Spec, []string) {
		return actor.Spec{Role: actor.Orders, DB: e.Scratch.Name, Plant: plantName}, actor.Env(dsnVia(ordersDB), e.Secret)
	})
	cr.orders.stopAt = []fault.Point{aimsOf["orders"]}
	for i := 1; i <= cr.cfg.Relays; i++ {
		name := nemesis.RelayName(i)
		db, err := link(name, nemesis.TargetDatabase, dbAddr)
		if err != nil {
			return err
		}
		br, err := link(name, nemesis.TargetBroker, e.Kafka.Brokers[0])
		if err != nil {
			return err
		}
		rs := cr.newSlot(name, func(actorName string) (actor.Spec, []string) {
			return actor.Spec{
				Role: actor.Relay, DB: e.Scratch.Name, Plant: plantName, Brokers: []string{br.Addr}, Via: br.Addr,
				Topic: cr.topic, ClaimID: chaosClaimID(e.RunID), Lease: nemesis.PauseLease,
				PublishTimeout: chaosPublishTimeout, Batch: chaosBatch, Poll: 50 * 1e6,
			}, actor.Env(dsnVia(db), nil)
		})
		rs.stopAt = []fault.Point{fault.AfterPublishBeforeMark, aimsOf["relay"], fault.TakeoverPublished} // pause, conn-kill, pause's taker
	}
	for i := 1; i <= cr.cfg.Consumers; i++ {
		name := nemesis.ConsumerName(i)
		db, err := link(name, nemesis.TargetDatabase, dbAddr)
		if err != nil {
			return err
		}
		br, err := link(name, nemesis.TargetBroker, e.Kafka.Brokers[0])
		if err != nil {
			return err
		}
		cs := cr.newSlot(name, func(actorName string) (actor.Spec, []string) {
			return actor.Spec{
				Role: actor.Consumer, DB: e.Scratch.Name, Plant: plantName, Brokers: []string{br.Addr}, Via: br.Addr,
				Topic: cr.topic, Group: cr.group, Name: "notifier", Member: actorName, InstanceID: name,
			}, actor.Env(dsnVia(db), nil)
		})
		cs.stopAt = []fault.Point{aimsOf["consumer"]}
	}
	for _, s := range cr.slots {
		go s.supervise(ctx)
	}
	for _, s := range cr.slots {
		select {
		case <-s.started:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
		err := s.startErr
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("start %s: %w", s.name, err)
		}
	}
	return nil
}

// chaosClaimID is the claim id of every relay of the chaos scenario: they
// run as replicas of one deployment configured with one instance id, and
// keep it when restarted. Only claim_version then tells their claims
// apart, as it tells one relay's own claims apart after it took its own
// row over; a compare-and-set that checks less than the whole token
// (claim_version and claim_id) lets a zombie's stale mark through. The
// actor names still tell the processes apart in the evidence.
func chaosClaimID(runID string) string { return "relays-" + runID }

// stopActors stops every slot, all at once, each with chaosStopGrace to
// stop cleanly. It is idempotent.
func (cr *chaosRun) stopActors() {
	var wg sync.WaitGroup
	for _, s := range cr.slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop(chaosStopGrace)
		}()
	}
	wg.Wait()
}
