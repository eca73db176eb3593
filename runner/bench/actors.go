package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/orders"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
)

// principal places every order of a bench.
const principal = "bench"

// skuCount SKUs share the orders, so that placements do not queue on one
// stock row's lock.
const skuCount = 64

// A relay that found nothing waits minIdlePoll, twice as long after each
// further empty round up to maxIdlePoll, and not at all after a round
// that claimed something: polling an empty outbox every millisecond costs
// the database a transaction each time, which the order service and the
// consumers need; maxIdlePoll bounds what waiting adds to the latency.
const (
	minIdlePoll = time.Millisecond
	maxIdlePoll = 20 * time.Millisecond
)

// actors are the running order service, relays and consumers of a run.
type actors struct {
	srv       *httptest.Server
	client    *orders.Client
	token     string
	relays    []*relay.Relay
	producers []*kgo.Client
	consumers []*consumer.Consumer

	marked atomic.Int64 // intents the relays marked SENT

	mu       sync.Mutex
	firstErr error
	running  []func() // stop functions of running loops
}

// fail records the first error of a running actor.
func (a *actors) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.firstErr == nil {
		a.firstErr = err
	}
}

func (a *actors) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.firstErr
}

// start runs loop in a goroutine until the stop function it adds is
// called (stop waits for it).
func (a *actors) start(ctx context.Context, loop func(ctx context.Context)) {
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop(lctx)
	}()
	a.mu.Lock()
	a.running = append(a.running, func() { cancel(); <-done })
	a.mu.Unlock()
}

// stopLoops stops every running loop.
func (a *actors) stopLoops() {
	a.mu.Lock()
	running := a.running
	a.running = nil
	a.mu.Unlock()
	for _, stop := range running {
		stop()
	}
}

// stop stops the loops and closes the clients and the HTTP server.
func (a *actors) stop() {
	a.stopLoops()
	for _, c := range a.consumers {
		c.Close()
	}
	a.consumers = nil
	for _, cl := range a.producers {
		cl.Close()
	}
	a.producers = nil
	if a.srv != nil {
		a.srv.Close()
		a.srv = nil
	}
}

// startOrders starts the order service on a loopback HTTP server and a
// client with a connection per placement client.
func (p *pipeline) startOrders() error {
	secret := make([]byte, orders.MinSecretBytes)
	_, _ = rand.Read(secret)
	log, err := p.log("orders")
	if err != nil {
		return err
	}
	svc, err := orders.New(orders.Config{DB: p.db, Secret: secret, Log: log})
	if err != nil {
		return err
	}
	p.srv = httptest.NewServer(svc)
	tr := &http.Transport{MaxIdleConnsPerHost: p.opts.Clients, MaxConnsPerHost: p.opts.Clients}
	p.client = &orders.Client{BaseURL: p.srv.URL, HTTP: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	p.token, err = orders.SignToken(secret, principal, time.Now().Add(24*time.Hour))
	return err
}

// newRelays makes Options.Relays relays, each with its own producer and
// event log.
func (p *pipeline) newRelays() error {
	for i := range p.opts.Relays {
		actor := fmt.Sprintf("relay-%d", i+1)
		log, err := p.log(actor)
		if err != nil {
			return err
		}
		opts := append(relay.ProducerOpts(publishTimeout), kgo.ProducerLinger(p.opts.Linger))
		cl, err := kgo.NewClient(p.kafka.ClientOpts(opts...)...)
		if err != nil {
			return fmt.Errorf("producer of %s: %w", actor, err)
		}
		p.producers = append(p.producers, cl)
		r, err := relay.New(relay.Config{DB: p.db, Client: cl, Topic: p.topic, Batch: p.opts.Batch,
			PublishTimeout: publishTimeout, Log: log, Actor: actor, ClaimID: actor + "-" + p.runID})
		if err != nil {
			return err
		}
		p.relays = append(p.relays, r)
	}
	return nil
}

// runRelays runs every relay's rounds until stopLoops.
func (p *pipeline) runRelays(ctx context.Context) {
	for _, r := range p.relays {
		p.start(ctx, func(ctx context.Context) {
			idle := time.Duration(0)
			for ctx.Err() == nil {
				res, err := r.RunOnce(ctx)
				p.marked.Add(int64(res.Marked))
				if err != nil {
					if ctx.Err() == nil {
						p.fail(fmt.Errorf("%s: %w", r.Actor(), err))
					}
					return
				}
				if len(res.Claimed) > 0 {
					idle = 0
					continue
				}
				idle = min(max(2*idle, minIdlePoll), maxIdlePoll)
				select {
				case <-ctx.Done():
				case <-time.After(idle):
				}
			}
		})
	}
}

// startConsumers makes Options.Consumers members of one group and runs
// them until stopLoops.
func (p *pipeline) startConsumers(ctx context.Context) error {
	for i := range p.opts.Consumers {
		member := fmt.Sprintf("consumer-%d", i+1)
		log, err := p.log(member)
		if err != nil {
			return err
		}
		c, err := consumer.New(ctx, consumer.Config{DB: p.db, ClientOpts: p.kafka.ClientOpts(), Topic: p.topic,
			Group: "ofa-bench-" + p.runID, Member: member, Log: log, BatchEffects: !p.opts.ConsumerPerRecord})
		if err != nil {
			return err
		}
		p.consumers = append(p.consumers, c)
		p.start(ctx, func(ctx context.Context) {
			if err := c.Run(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, consumer.ErrClosed) {
				p.fail(fmt.Errorf("%s: %w", member, err))
			}
		})
	}
	return nil
}

// effects is the number of effects the consumers committed.
func (p *pipeline) effects() int64 {
	var n int64
	for _, c := range p.consumers {
		n += int64(c.Stats().Effects)
	}
	return n
}
